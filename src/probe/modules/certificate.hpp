#pragma once
// The certificate module's part of a target's result: the server certificate of the first
// successful handshake.

#include <cstdint>
#include <string>
#include <vector>

namespace ngxtls::probe {

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
};

}  // namespace ngxtls::probe
