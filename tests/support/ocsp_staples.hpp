#pragma once
// Hand-made OCSP responses for a PKI made by ngxtls::tls::make_pki, one per way a staple can be
// good or bad, and a TLS server that staples any bytes (nginx refuses an ssl_stapling_file
// that is not a DER OCSPResponse). No doctest macros here.

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tls/pki.hpp"

namespace ngxtls::test {

/// The kinds of staple make_staple writes.
enum class staple_kind {
  good,                     ///< `openssl ocsp` local responder: good, signed by the issuer
  good_no_certs,            ///< the same with -resp_no_certs (the signer's certificate left out)
  good_sha256_certid,       ///< good, with the CertID hashed with SHA-256 (`openssl ocsp -sha256`)
  two_singles,              ///< good; a SingleResponse for serial 0x1234 first, then the leaf's
  delegated,                ///< signed by a responder the issuer issued with OCSPSigning EKU
  delegated_without_eku,    ///< signed by a certificate of the issuer without OCSPSigning EKU
  delegated_by_other_ca,    ///< signed by an OCSPSigning responder of another CA
  signed_by_other_ca,       ///< right CertID, signed by another CA (its certificate included)
  revoked,                  ///< `openssl ocsp` with the leaf revoked (keyCompromise) in index.txt
  unknown,                  ///< `openssl ocsp` with an index.txt that does not list the leaf
  other_serial,             ///< good for another serial of the same issuer
  other_issuer,             ///< good for another PKI's leaf (other issuer, other serial)
  expired,                  ///< thisUpdate 2 h ago, nextUpdate 1 h ago (OpenSSL API)
  expired_within_skew,      ///< nextUpdate 60 s ago: inside the 5-minute clock skew, still valid
  not_yet_valid,            ///< thisUpdate in 1 h (OpenSSL API)
  try_later,                ///< responseStatus tryLater, no body
  successful_garbage_body,  ///< responseStatus successful, responseBytes basic with junk inside
  random_bytes,             ///< 3,000 pseudo-random bytes (fixed seed), no DER at all
};

/// A short name for test messages ("good", "revoked", ...).
const char* to_string(staple_kind k);

/// Writes the staple of `kind` for the leaf of `pki` (which must have an issuer) to
/// `dir`/staple-<kind>.der and returns that path. Helper certificates (responders, another
/// CA) go under `dir` too. Throws std::runtime_error when openssl fails.
std::string make_staple(const tls::pki_paths& pki, const std::string& dir, staple_kind kind);

/// A TLS server on 127.0.0.1:`port` (libssl, a thread of the test process) presenting
/// `chain`/`key` and stapling exactly the bytes of `staples` to clients that ask (TLS 1.2 and
/// 1.3), in turn: the first to the first client, the second to the next, ... and round again
/// (like workers holding different staples). It never resumes a session, so every handshake
/// carries a staple. Each connection is served in turn: handshake, close_notify, close. Stops
/// on destruction.
class staple_server {
 public:
  /// Throws std::runtime_error when the port cannot be bound or the files cannot be loaded.
  staple_server(int port, const std::string& chain, const std::string& key,
                std::vector<std::string> staples);
  ~staple_server();
  staple_server(const staple_server&) = delete;
  staple_server& operator=(const staple_server&) = delete;

 private:
  void serve();
  int fd_ = -1;
  void* ctx_ = nullptr;  // SSL_CTX*
  std::vector<std::string> staples_;
  std::size_t next_ = 0;  // touched only by the server thread (the status callback)
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ngxtls::test
