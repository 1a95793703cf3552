#pragma once
// A stand-in for a TLS backend, run by ngxtls on loopback inside the sandbox: nginx's TLS
// upstreams are pointed at it, so that `check --sandbox` sees every upstream TLS handshake nginx
// makes (full or resumed, protocol, SNI, client certificate) and every request on each
// connection. It answers HTTP/1.1 with Content-Length and keep-alive; it reaches no other host.

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tls/pki.hpp"

namespace ngxtls::sandbox {

/// One TLS connection nginx opened to a stand-in, as the stand-in saw it.
struct standin_connection {
  bool handshake_done = false;      ///< false: nginx gave up (or failed) during the handshake
  bool resumed = false;             ///< an abbreviated handshake (session ID, ticket or PSK)
  std::string protocol;             ///< "TLSv1.3", "TLSv1.2", ... ("" before the handshake)
  std::string sni;                  ///< the server name nginx sent, "" when none
  bool client_certificate = false;  ///< nginx presented a client certificate
  int requests = 0;                 ///< HTTP requests answered on this connection
};

/// Totals over a stand-in's connections.
struct standin_counts {
  int connections = 0;        ///< TCP connections accepted
  int handshakes = 0;         ///< completed TLS handshakes
  int full_handshakes = 0;    ///< completed, not resumed
  int resumed = 0;            ///< completed, resumed
  int failed_handshakes = 0;  ///< accepted, handshake never completed
  int requests = 0;           ///< HTTP requests answered
  std::set<std::string> sni;  ///< distinct SNI values received ("" for none)
  std::set<std::string> protocols;
  int client_certificates = 0;  ///< connections on which nginx presented one
};
/// Folds `connections` into totals.
standin_counts count(const std::vector<standin_connection>& connections);

/// How a stand-in is made.
struct standin_options {
  /// The name its certificate is issued for (SAN dNSName); the sandbox gives the configured
  /// proxy_ssl_name (else the upstream's host), or a deliberately wrong one.
  std::string certificate_name = "localhost";
  /// Directory for its PKI (created); the CA that issued the leaf is pki().issuer / root_cert.
  std::string pki_dir;
  /// Upper bounds: bytes of one request head, open connections, connections recorded.
  std::size_t max_request_head_bytes = 16384;
  int max_connections = 512;
  int max_recorded_connections = 100000;
  /// A connection idle (no byte either way) this long is closed.
  int idle_timeout_ms = 30000;
};

/// A TLS server on 127.0.0.1:port() served by one thread with one poll() loop; it stops and
/// joins in the destructor. Not copyable. Thread-safe readers.
class upstream_standin {
 public:
  /// Makes its PKI (root -> leaf for options.certificate_name) and listens on a free loopback
  /// port not in `taken` (added to it). Throws target_error when no port can be bound,
  /// openssl_error when the TLS context cannot be made.
  upstream_standin(const standin_options& options, std::set<int>& taken);
  ~upstream_standin();
  upstream_standin(const upstream_standin&) = delete;
  upstream_standin& operator=(const upstream_standin&) = delete;

  int port() const { return port_; }
  /// "127.0.0.1:PORT".
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  /// Its certificate files: chain (leaf), leaf_key, and the CA file that verifies it (root_cert).
  const tls::pki_paths& pki() const { return pki_; }
  const std::string& certificate_name() const { return name_; }
  /// Every connection so far (a copy), in accept order.
  std::vector<standin_connection> connections() const;

 private:
  struct state;
  void serve();

  std::string name_;
  tls::pki_paths pki_;
  int port_ = 0;
  int listen_fd_ = -1;
  int wake_fd_[2] = {-1, -1};
  std::unique_ptr<state> state_;
  std::thread thread_;
};

}  // namespace ngxtls::sandbox
