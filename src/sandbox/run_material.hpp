#pragma once
// The material of one sandbox run: the files nginx reads in place of the configured ones (copies
// when nginx runs as another user, stand-ins for what is not readable here), and the way paths
// and addresses of the run are translated for nginx and back into the user's terms.

#include <cstddef>
#include <map>
#include <string>

#include "tls/pki.hpp"

namespace ngxtls::sandbox {

/// The files under RUN_DIR/material and what each stands for. Not copyable.
class run_material {
 public:
  run_material() = default;
  run_material(const run_material&) = delete;
  run_material& operator=(const run_material&) = delete;

  /// Starts a run in `run_dir`. `copies`: nginx runs as the sandbox identity, which may not read
  /// the configured files, and reads copies; it then reaches the run directory as
  /// /proc/self/cwd (its working directory), not by its path.
  void start(const std::string& run_dir, bool copies);

  /// A file nginx reads, as nginx gets it: `real` itself when nginx runs as this user; else a
  /// copy in the run directory (one per real file, at most 64 MiB), "" when it cannot be copied.
  /// Messages show the copy as `configured`.
  std::string file_for_nginx(const std::string& real, const std::string& configured);

  /// A stand-in ticket key file for the configured file `real`.
  struct ticket_key_file {
    std::string path;
    std::size_t size_bytes = 80;  ///< the real file's size when that is 48 or 80 bytes
    bool made_now = false;        ///< false: the one made before for the same path
  };
  /// The stand-in for `real` (one per path, shown as `configured`), made the first time.
  ticket_key_file ticket_key_standin(const std::string& real, const std::string& configured);
  /// Configured ticket key path (absolute) -> the stand-in file nginx runs with.
  const std::map<std::string, std::string>& ticket_key_standins() const { return ticket_keys_; }

  /// The stand-in PKI made for `key` (a certificate and key pair, a client CA), or null.
  const tls::pki_paths* stand_in_pki(const std::string& key) const;
  /// Makes the stand-in PKI for `key` with `options` in a new directory of the run.
  const tls::pki_paths& make_stand_in_pki(const std::string& key, const tls::pki_options& options,
                                          bool leaf_only);
  /// A CA file holding `pki`'s issuer and root, shown as `configured`.
  std::string ca_bundle(const tls::pki_paths& pki, const std::string& configured);

  /// Messages show `path` (a file of the run) as `configured`.
  void show_as(const std::string& path, const std::string& configured);
  /// Messages show the loopback address `address` ("127.0.0.1:P") as the configured socket.
  void show_address_as(const std::string& address, const std::string& socket);
  /// Forgets every address (the ports are chosen again).
  void forget_addresses() { address_shown_as_.clear(); }
  /// `message` in the user's terms: files of the run as configured, loopback addresses as the
  /// configured sockets, the run directory as "<sandbox>".
  std::string in_configured_terms(std::string message) const;

  /// A path under the run directory as nginx reaches it: /proc/self/cwd/... when it runs as the
  /// sandbox identity (whose working directory is the run directory, whose parents it may not
  /// traverse); other paths as they are.
  std::string path_for_nginx(const std::string& path) const;
  /// nginx's words with its /proc/self/cwd paths written as the run directory's.
  std::string paths_from_nginx(std::string text) const;
  /// Every run path in `text` (a config) as nginx reaches it.
  std::string config_for_nginx(const std::string& text) const;

 private:
  std::string next_file(const std::string& stem, const std::string& extension);

  std::string run_dir_, nginx_root_;
  bool copies_ = false;
  int files_made_ = 0;                                   ///< numbers the files of the run
  std::map<std::string, std::string> copy_of_;           ///< real path -> copy nginx reads
  std::map<std::string, std::string> ticket_keys_;       ///< real resolved path -> stand-in path
  std::map<std::string, tls::pki_paths> pki_of_;         ///< key -> stand-in PKI
  std::map<std::string, std::string> path_shown_as_;     ///< run file -> configured text
  std::map<std::string, std::string> address_shown_as_;  ///< "127.0.0.1:P" -> configured socket
};

/// `s` with every `from` replaced by `to`.
std::string replace_all(std::string s, const std::string& from, const std::string& to);

}  // namespace ngxtls::sandbox
