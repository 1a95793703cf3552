#pragma once
// File lookups for rules, done once per path across every server: a config with thousands
// of servers names the same certificate and key files over and over, and a fleet's config
// names thousands of distinct ones, which prefetch() decodes on several threads before the
// rules run.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tls/certificate.hpp"
#include "tls/ticket_key.hpp"

namespace ngxtls::engine {

/// The outcome of reading one file: the facts, or why not.
template <class T>
struct lookup {
  std::optional<T> facts;  ///< set when the file was read
  bool missing = false;    ///< the file does not exist on this machine
  std::string error;       ///< why it could not be read (never file content)
};

/// Cached reads through src/tls. Paths are resolved ones (absolute or as nginx would open them).
/// Thread-safe: rules run in parallel (engine::run). Each file is read and decoded once,
/// whichever thread asks first; distinct files are decoded side by side.
struct file_facts {
  file_facts();
  ~file_facts();
  file_facts(const file_facts&) = delete;
  file_facts& operator=(const file_facts&) = delete;

  /// Every certificate in an ssl_certificate file (leaf first).
  const lookup<std::vector<tls::certificate_info>>& certificate(const std::string& path);
  /// A ssl_session_ticket_key file's size, mode, key name and fingerprint (never the key).
  const lookup<tls::ticket_key_info>& ticket_key(const std::string& path);
  /// tls::issuer_available, cached; nullopt when the chain file cannot be read.
  std::optional<bool> issuer_available(const std::string& chain,
                                       const std::vector<std::string>& cas);
  /// Prime bits of an ssl_dhparam file (tls::dhparam_bits).
  const lookup<int>& dhparam(const std::string& path);
  /// tls::key_matches_certificate for a certificate and key file pair: facts holds nullopt
  /// when they match, else the reason; missing/error describe either file (the certificate's
  /// first). Each file is read once, however many pairs name it.
  const lookup<std::optional<std::string>>& key_match(const std::string& cert,
                                                      const std::string& key);
  /// Records that stat() of `path` failed with `stat_errno`: its certificate and private key
  /// lookups fail as reading it would (missing for ENOENT), without another stat().
  void learn_unstatable(const std::string& path, int stat_errno);
  /// Reads and decodes the certificate files `certificates` and the private key files `keys`
  /// on up to `threads` threads (at least one), so that later lookups find them decoded.
  void prefetch(const std::vector<std::string>& certificates, const std::vector<std::string>& keys,
                unsigned threads);

 private:
  /// One cache of lookups by key; each entry is filled once (see file_facts.cpp).
  template <class T>
  struct cache;
  const lookup<std::vector<tls::x509_ptr>>& x509s(const std::string& path);
  const lookup<tls::private_key_file>& private_key(const std::string& path);

  std::unique_ptr<cache<std::vector<tls::x509_ptr>>> x509s_;
  std::unique_ptr<cache<std::vector<tls::certificate_info>>> certs_;
  std::unique_ptr<cache<tls::private_key_file>> private_keys_;
  std::unique_ptr<cache<tls::ticket_key_info>> ticket_keys_;
  std::unique_ptr<cache<int>> dhparams_;
  std::unique_ptr<cache<std::optional<std::string>>> key_matches_;
  std::mutex issuers_mu_;
  std::map<std::string, std::optional<bool>> issuers_;
};

}  // namespace ngxtls::engine
