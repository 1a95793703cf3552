#pragma once
// File lookups for rules, done once per path across every server: a config with thousands
// of servers names the same certificate and key files over and over.

#include <map>
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
/// Thread-safe: rules run in parallel (engine::run).
struct file_facts {
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
  /// when they match, else the reason; missing/error describe either file.
  const lookup<std::optional<std::string>>& key_match(const std::string& cert,
                                                      const std::string& key);

 private:
  std::mutex mu_;  ///< one lock: a file is read once, whichever rule asks first
  std::map<std::string, lookup<std::vector<tls::certificate_info>>> certs_;
  std::map<std::string, lookup<tls::ticket_key_info>> keys_;
  std::map<std::string, std::optional<bool>> issuers_;
  std::map<std::string, lookup<int>> dhparams_;
  std::map<std::string, lookup<std::optional<std::string>>> key_matches_;
};

}  // namespace ngxtls::engine
