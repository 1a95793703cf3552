#pragma once
// What the prober measured, per target and per protocol run. Plain values with units in their
// names; src/report turns them into text, JSON (docs/probe-json.md) and Prometheus metrics.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ngxtls::probe {

/// Median and 90th percentile (nearest rank) of a set of durations, in milliseconds.
struct timing_ms {
  std::size_t count = 0;  ///< how many samples; 0 = none (median/p90 then meaningless)
  double median = 0;      ///< ms
  double p90 = 0;         ///< ms
};

/// Nearest-rank median and p90 of `samples_ms` (any order). Empty input gives count 0.
timing_ms summarize_ms(std::vector<double> samples_ms);

/// One protocol/mechanism run: one full handshake to obtain a session (or the --sess-in
/// session), then `attempts` resumption attempts, each on a fresh TCP connection.
struct run_result {
  std::string protocol;   ///< "TLSv1.3" or "TLSv1.2" (what was asked for)
  std::string mechanism;  ///< "ticket" (TLS 1.2 tickets, all TLS 1.3 PSK) or "session_id"
  std::string mode;       ///< "same_session" (every attempt offers the first session) or
                          ///< "fresh_tickets" (every attempt offers the newest ticket)
  bool supported = true;  ///< false: the server refused this protocol (handshake alert)
  std::optional<std::string> error;  ///< why the run could not be measured; null when it was
  std::string session_source = "handshake";  ///< "handshake" or "sess_in" (--sess-in file)
  bool session_offered = true;  ///< false: the first handshake gave nothing to resume with
                                ///< (TLS 1.2 ticket run against a server that issues no ticket)

  int attempts = 0;            ///< resumption attempts that completed a handshake
  int resumed = 0;             ///< of those, SSL_session_reused() == 1
  double rate = 0;             ///< resumed / attempts (0 when attempts == 0)
  int failed_connections = 0;  ///< attempts that ended in an error (not counted in `attempts`)
  std::optional<std::string> last_attempt_error;  ///< text of the last such error
  std::vector<bool> outcomes;                     ///< per attempt in launch order: resumed or not
  /// HTTP status of each attempt's response to `HEAD /`: status -> attempts (empty with
  /// --no-http, or when no response began with a status line). nginx answers a TLS 1.2 session
  /// resumed under another server name with 421 Misdirected Request.
  std::map<int, int> http_statuses;
  bool single_use_pattern = false;  ///< same_session mode: exactly one attempt resumed out of
                                    ///< >= 3 (tickets look single-use, RFC 8446 section 8.1)

  // Tickets (and TLS 1.2 session IDs) received on every connection of the run.
  int tickets = 0;  ///< NewSessionTicket messages (sessions with a ticket) received
  int stateful_tickets =
      0;  ///< tickets of <= 48 bytes: a session ID, needs the server cache
          ///< (docs/nginx-facts.md#tickets-off-tls13: nginx with tickets off sends 32-byte TLS 1.3
          ///< tickets; test_probe_nginx "tickets off without a session cache")
  int stateless_tickets = 0;  ///< longer tickets: the session sealed under a ticket key
  std::size_t ticket_min_bytes = 0, ticket_max_bytes = 0;  ///< sizes seen, bytes
  std::map<std::string, int> ticket_key_names;  ///< first 16 bytes (hex) -> tickets, only
                                                ///< prefixes that repeat across tickets; equals the
                                                ///< ssl_session_ticket_key file's first 16 bytes
                                                ///< (docs/nginx-facts.md#ticket-key-rotation;
                                                ///< test_probe_keys "key rotation")
  int opaque_tickets = 0;  ///< stateless tickets whose first 16 bytes never repeat
  std::optional<std::string> offered_key_name;   ///< first 16 bytes (hex) of the offered ticket
  std::optional<std::uint32_t> lifetime_hint_s;  ///< ticket lifetime hint, seconds (last seen)
  double tickets_per_connection = 0;  ///< tickets / connections that completed a handshake
  int max_tickets_per_connection = 0;
  std::uint32_t max_early_data = 0;  ///< max_early_data of the tickets (bytes; 0 = no 0-RTT)
  bool session_id_issued = false;    ///< first handshake got a non-empty session ID (TLS 1.2)

  timing_ms full_handshake_ms;     ///< connect + handshake of non-resumed connections
  timing_ms resumed_handshake_ms;  ///< connect + handshake of resumed connections
  double elapsed_ms = 0;           ///< wall time of the whole run
  int connections = 0;             ///< connections that completed a handshake (incl. the first)

  std::string negotiated_protocol;  ///< SSL_get_version of the first handshake, e.g. "TLSv1.3"
  std::string cipher;               ///< e.g. "TLS_AES_256_GCM_SHA384"
  std::string group;                ///< key exchange group, e.g. "X25519"; "" when unknown
  std::string alpn;                 ///< negotiated ALPN protocol, "" when none
};

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

/// OCSP stapling as seen over several connections (docs/nginx-facts.md#ocsp-stapling-quiet: nginx
/// fetches staples lazily per worker, so the first connections may carry none; test_probe_ocsp
/// "stapling from a local OCSP responder"). Only full handshakes count: resumed ones carry no
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
  /// The staple's verdict (tls::to_string(tls::staple_verdict): "valid", "garbage",
  /// "not_successful", "malformed", "other_certificate", "unverifiable", "revoked", "unknown",
  /// "expired", "not_yet_valid"); null without a staple.
  std::optional<std::string> staple_status;
  std::optional<std::string> staple_reason;  ///< one phrase: what is wrong with it, or "good, ..."
  std::optional<std::string>
      response_status;  ///< "successful", "trylater", ...; "unparsable" for garbage
  std::optional<std::string> cert_status;  ///< "good", "revoked", "unknown" for this certificate
  std::optional<std::int64_t> revocation_time_unix;  ///< revoked only
  std::optional<std::string> revocation_reason;   ///< CRLReason, e.g. "keyCompromise"; revoked only
  std::optional<std::int64_t> next_update_in_s;   ///< nextUpdate - now, seconds
  std::optional<std::int64_t> this_update_age_s;  ///< now - thisUpdate, seconds
};

/// Everything measured for one target.
struct target_result {
  std::string target;   ///< as given
  std::string address;  ///< "ip:port" dialled ("[v6]:port" for IPv6), "" when unresolved
  std::string sni;      ///< SNI sent ("" = none)
  std::optional<std::string> error;  ///< why the target could not be probed; null when it was
  std::vector<run_result> protocols;
  std::optional<certificate_facts> certificate;
  ocsp_result ocsp;
  double elapsed_ms = 0;
};

}  // namespace ngxtls::probe
