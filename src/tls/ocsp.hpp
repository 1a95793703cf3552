#pragma once
// OCSP responses as nginx staples them (ssl_stapling_file, or a staple a prober received).

#include <openssl/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
  /// CRLReason as OCSP_crl_reason_str spells it ("keyCompromise", ...); revoked only, and
  /// empty when the response gives no reason.
  std::string revocation_reason;
  int single_responses = 0;  ///< SingleResponses in the response
};

/// What a stapled OCSP response is worth to a client of one certificate. Checked in this
/// order; the first problem found is the verdict.
enum class staple_verdict {
  valid,              ///< good, signed by the issuer or its delegated responder, in its window
  garbage,            ///< not a DER OCSPResponse
  not_successful,     ///< responseStatus other than successful (tryLater, internalError, ...)
  malformed,          ///< successful, but no BasicOCSPResponse inside (or a broken time window)
  other_certificate,  ///< no SingleResponse for this certificate's CertID (serial, issuer)
  unverifiable,       ///< not signed by the issuer nor by a responder it delegated to, or the
                      ///< server's chain lacks the issuer, so the signature cannot be checked
  revoked,            ///< the responder says the certificate is revoked
  unknown,            ///< the responder does not know the certificate
  expired,            ///< nextUpdate is past (beyond the allowed clock skew)
  not_yet_valid,      ///< thisUpdate is in the future (beyond the allowed clock skew)
};

/// "valid", "garbage", "not_successful", "malformed", "other_certificate", "unverifiable",
/// "revoked", "unknown", "expired", "not_yet_valid".
std::string to_string(staple_verdict v);

/// The verdict on one staple, with what the response says.
struct staple_check {
  staple_verdict verdict = staple_verdict::garbage;
  /// One phrase: what is wrong with the staple, or why it is valid ("good, signed by the
  /// issuer"). Names the responseStatus, revocation time and reason, time offsets.
  std::string reason;
  /// What the response says. cert_status and the times are those of this certificate's
  /// SingleResponse (empty/0 when it has none).
  ocsp_response_info info;
  bool delegated_responder = false;  ///< signed by a responder the issuer delegated to
};

/// Clock skew allowed on thisUpdate/nextUpdate, seconds (as OCSP_check_validity's `nsec`).
inline constexpr long ocsp_clock_skew_s = 300;

/// Checks a stapled OCSP response `der` (RFC 6960) for `leaf`, as a client would:
/// it must parse as a successful BasicOCSPResponse, hold a SingleResponse whose CertID names
/// the leaf's serial and its issuer (name and key hash, in the hash the response uses), be
/// signed by that issuer or by a responder certificate the issuer issued with the OCSP
/// signing extended key usage (OCSP_basic_verify with only the issuer trusted: never the system
/// store), say good, and be within thisUpdate/nextUpdate with `skew_s` seconds of slack
/// (OCSP_check_validity). The issuer is looked up in `chain` (the certificates the server sent
/// after the leaf): the one that issued and signed `leaf`. Never throws on bad input: every
/// problem is a verdict.
staple_check check_ocsp_staple(std::string_view der, X509* leaf, const std::vector<X509*>& chain,
                               long skew_s = ocsp_clock_skew_s);

/// Parses a DER OCSP response (d2i_OCSP_RESPONSE). With `leaf` and `issuer` the status is the
/// SingleResponse for the leaf's CertID (in whatever hash the response uses); without them,
/// the first SingleResponse. The signature is not verified here: check_ocsp_staple does that.
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
