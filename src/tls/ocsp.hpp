#pragma once
// OCSP responses as nginx staples them (ssl_stapling_file, or a staple a prober received).

#include <openssl/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "tls/errors.hpp"

namespace ngxtls::tls {

/// What an OCSP response says about one certificate. Times are Unix seconds (UTC); 0 = absent.
struct ocsp_response_info {
  /// RFC 6960 responseStatus as OCSP_response_status_str spells it: "successful",
  /// "malformedrequest", "internalerror", "trylater", "sigrequired", "unauthorized".
  std::string response_status;
  /// "good", "revoked" or "unknown" for the certificate asked about; empty when the response
  /// is not successful or has no SingleResponse for it.
  std::string cert_status;
  std::int64_t this_update_unix = 0;
  std::int64_t next_update_unix = 0;      ///< 0: no nextUpdate (the responder promises nothing)
  std::int64_t revocation_time_unix = 0;  ///< revoked only
  int single_responses = 0;               ///< SingleResponses in the response
};

/// Parses a DER OCSP response (d2i_OCSP_RESPONSE). With `leaf` and `issuer` the status is the
/// SingleResponse for the leaf's CertID (SHA-1, as nginx and OpenSSL clients ask); without
/// them, the first SingleResponse. The signature is not verified here.
/// Throws std::invalid_argument when `der` is not a DER OCSP response.
ocsp_response_info parse_ocsp_response(std::string_view der, X509* leaf = nullptr,
                                       X509* issuer = nullptr);

/// Reads an ssl_stapling_file and parses it as parse_ocsp_response does for the leaf of
/// `chain_path` (first certificate) and its issuer (found after the leaf in `chain_path` or
/// in `issuer_path`, when given); without an issuer, the first SingleResponse.
/// Throws file_error when a file cannot be read, or `der_path` is not a DER OCSP response.
ocsp_response_info read_ocsp_response_file(const std::string& der_path,
                                           const std::string& chain_path = "",
                                           const std::string& issuer_path = "");

}  // namespace ngxtls::tls
