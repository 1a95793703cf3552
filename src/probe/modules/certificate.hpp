#pragma once
// The certificate module's part of a target's result: the server certificate of the first
// successful handshake.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ngxtls::probe {

/// One certificate of the chain the server sent, as its expiry metric labels it.
struct chain_certificate {
  std::string subject, issuer;      ///< RFC 2253 one-line names, cut to max_certificate_label_bytes
  std::string serial_hex;           ///< serial number, uppercase hex
  std::int64_t not_after_unix = 0;  ///< seconds since the epoch
};

/// Certificates of the chain kept per target, leaf first: the bound on the series of
/// ngxtls_certificate_not_after_timestamp_seconds per target (nginx sends the leaf and its
/// intermediates; a longer chain is counted in chain_length, its tail not kept).
inline constexpr std::size_t max_chain_certificates = 8;
/// Subject and issuer longer than this are cut (with "..."), so that a server's names cannot
/// make series of any size.
inline constexpr std::size_t max_certificate_label_bytes = 256;

/// The server certificate of the first successful handshake.
struct certificate_facts {
  std::string subject, issuer;      ///< RFC 2253 one-line names
  std::string key_type;             ///< "RSA", "EC", "Ed25519", ...
  int key_bits = 0;                 ///< RSA modulus / EC field size, bits
  std::int64_t not_after_unix = 0;  ///< seconds since the epoch
  double days_to_expiry = 0;        ///< (notAfter - now) / 86400; negative when expired
  bool ocsp_url_present = false;    ///< the AIA extension names an OCSP responder
  std::vector<std::string> ocsp_urls;
  std::vector<std::string> dns_names;
  std::string sha256_hex;
  int chain_length = 0;  ///< certificates the server sent
  /// The first max_chain_certificates of them, in the order sent (the leaf first).
  std::vector<chain_certificate> chain;
};

}  // namespace ngxtls::probe
