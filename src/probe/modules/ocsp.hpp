#pragma once
// The OCSP module's part of a target's result: stapling as seen over several connections.

#include <cstdint>
#include <optional>
#include <string>

#include "tls/ocsp.hpp"

namespace ngxtls::probe {

/// What the prober concluded about OCSP stapling on one target.
enum class ocsp_status {
  working,         ///< staples arrived and every one is valid (tls::check_ocsp_staple)
  invalid,         ///< staples arrived, at least one is not valid (garbage, revoked, expired, ...)
  absent,          ///< no staple on any connection although the certificate names a responder
  not_applicable,  ///< no staple and no OCSP URL in the certificate
  skipped,         ///< --no-ocsp, or no handshake succeeded
};
/// "working", "invalid", "absent", "not_applicable", "skipped".
std::string to_string(ocsp_status s);

/// Whether the probe waited for a staple before its verdict (nginx fetches staples lazily, so
/// "absent" needs retries over ocsp_min_wait_ms; a leaf without a responder URL gets none).
enum class ocsp_wait {
  none,                      ///< not checked (--no-ocsp, or no handshake)
  staple_arrived,            ///< a staple came without waiting for it
  skipped_no_responder_url,  ///< no wait: the leaf names no OCSP responder, stapling cannot come
  waited,                    ///< retried for at least ocsp_min_wait_ms and ocsp_min_connections
};
/// "none", "staple_arrived", "skipped_no_responder_url", "waited".
std::string to_string(ocsp_wait w);

/// OCSP stapling as seen over several connections (nginx fetches staples lazily per worker,
/// so the first connections may carry none: test_probe_ocsp "stapling
/// from a local OCSP responder"). Only full handshakes count: resumed ones carry no
/// certificate. Every staple is checked against the certificate chain of its own handshake
/// (tls::check_ocsp_staple); the staple fields below describe the first invalid staple when
/// there is one, else the last staple.
struct ocsp_result {
  bool checked = false;   ///< false with --no-ocsp
  int connections = 0;    ///< connections that asked for a staple (status_request)
  int stapled = 0;        ///< of those, how many carried one
  int valid_staples = 0;  ///< of those, how many carried a valid staple
  bool first_connection_stapled = false;
  double waited_ms = 0;  ///< from the first to the last connection asked
  ocsp_status status = ocsp_status::skipped;
  ocsp_wait wait = ocsp_wait::none;  ///< whether the verdict waited for a staple
  /// The staple's verdict (tls::check_ocsp_staple); null without a staple.
  std::optional<tls::staple_verdict> staple_status;
  std::optional<std::string> staple_reason;  ///< one phrase: what is wrong with it, or "good, ..."
  std::optional<std::string>
      response_status;  ///< "successful", "trylater", ...; "unparsable" for garbage
  std::optional<std::string> cert_status;  ///< "good", "revoked", "unknown" for this certificate
  std::optional<std::int64_t> revocation_time_unix;  ///< revoked only
  std::optional<std::string> revocation_reason;   ///< CRLReason, e.g. "keyCompromise"; revoked only
  std::optional<std::int64_t> next_update_in_s;   ///< nextUpdate - now, seconds
  std::optional<std::int64_t> this_update_age_s;  ///< now - thisUpdate, seconds
};

/// The staple's verdict as text ("valid", "revoked", ...), or "?" without a staple.
std::string staple_status_text(const ocsp_result& o);

}  // namespace ngxtls::probe
