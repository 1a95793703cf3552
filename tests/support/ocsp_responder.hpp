#pragma once
// A local OCSP responder for tests: `openssl ocsp` serving a PKI made by ngxtls::tls::make_pki.
// No doctest macros here (the benches link support code without doctest).

#include <sys/types.h>

#include <string>

#include "tls/pki.hpp"

namespace ngxtls::test {

/// Runs `openssl ocsp -index IDX -port PORT -rsigner ISSUER -rkey ISSUERKEY -CA ISSUER
/// [-nrequest N] -ndays 1 -ignore_err` for the lifetime of the object (openssl 3.0 binds the
/// port on every address, [::]; clients use 127.0.0.1). The constructor returns once openssl
/// says it is waiting for connections (it listens by then). Do not open connections that send
/// no request: OpenSSL 3.0's single-process responder hangs on them. The destructor kills the
/// process (SIGTERM, then SIGKILL) and reaps it.
/// Typical use: port = free_port(); opts.ocsp_url = ocsp_responder::url_for(port);
/// paths = make_pki(dir, opts); ocsp_responder r(paths, port);
class ocsp_responder {
 public:
  /// `max_requests` 0 = serve until destroyed. Throws std::runtime_error when openssl cannot be
  /// started or does not listen within `start_timeout_ms`.
  ocsp_responder(const ngxtls::tls::pki_paths& pki, int port, int max_requests = 0,
                 int start_timeout_ms = 10000);
  ~ocsp_responder();
  ocsp_responder(const ocsp_responder&) = delete;
  ocsp_responder& operator=(const ocsp_responder&) = delete;

  /// The port it listens on (127.0.0.1).
  int port() const noexcept { return port_; }
  /// "http://127.0.0.1:PORT/", the URL to put in pki_options::ocsp_url.
  std::string url() const { return url_for(port_); }
  /// "http://127.0.0.1:PORT/" for a port chosen before the PKI is made.
  static std::string url_for(int port);
  /// What the responder printed on stdout/stderr so far (diagnostics for failing tests).
  std::string log() const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

}  // namespace ngxtls::test
