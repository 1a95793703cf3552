#pragma once
// What the prober measured, per target and per protocol run. Plain values with units in their
// names. Each part is filled by one measurement module (src/probe/modules/) and rendered by it;
// src/report drives the rendering into text, JSON (docs/probe-json.md) and Prometheus metrics.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probe/modules/certificate.hpp"
#include "probe/modules/close.hpp"
#include "probe/modules/early_data.hpp"
#include "probe/modules/load.hpp"
#include "probe/modules/ocsp.hpp"
#include "probe/modules/resumption.hpp"
#include "probe/modules/tickets.hpp"
#include "probe/modules/timings.hpp"
#include "probe/quic_probe.hpp"
#include "probe/timing.hpp"

namespace ngxtls::probe {

/// The protocol version a run asks for.
enum class tls_protocol { tls1_3, tls1_2 };
/// "TLSv1.3" or "TLSv1.2" (as OpenSSL's SSL_get_version spells them).
std::string to_string(tls_protocol p);

/// How a run resumes.
enum class resumption_mechanism {
  ticket,      ///< TLS 1.2 session tickets, and all TLS 1.3 PSK resumption
  session_id,  ///< TLS 1.2 session IDs (ticket extension off)
};
/// "ticket" or "session_id".
std::string to_string(resumption_mechanism m);

/// Which session each resumption attempt offers.
enum class offer_mode {
  same_session,   ///< every attempt offers the first session
  fresh_tickets,  ///< every attempt offers the newest ticket (--fresh-tickets)
};
/// "same_session" or "fresh_tickets".
std::string to_string(offer_mode m);

/// Where the session a run offers came from.
enum class session_origin {
  handshake,  ///< the run's own first full handshake
  sess_in,    ///< a saved session file (--sess-in)
};
/// "handshake" or "sess_in".
std::string to_string(session_origin s);

/// One protocol/mechanism run: one full handshake to obtain a session (or the --sess-in
/// session), then `attempts` resumption attempts, each on a fresh TCP connection. The fields
/// of this struct are the run's identity and flow (set by the plan); the bases are the parts
/// the measurement modules fill.
struct run_result : resumption_part, tickets_part, timings_part, close_part, early_data_part {
  tls_protocol protocol = tls_protocol::tls1_3;  ///< what was asked for
  resumption_mechanism mechanism = resumption_mechanism::ticket;
  offer_mode mode = offer_mode::same_session;
  bool supported = true;             ///< false: the server refused this protocol (handshake alert)
  std::optional<std::string> error;  ///< why the run could not be measured; null when it was
  session_origin session_source = session_origin::handshake;
  bool session_offered = true;     ///< false: the first handshake gave nothing to resume with
                                   ///< (TLS 1.2 ticket run against a server that issues no ticket)
  bool session_id_issued = false;  ///< first handshake got a non-empty session ID (TLS 1.2)
  std::optional<std::string> offered_key_name;  ///< first 16 bytes (hex) of the offered ticket

  double elapsed_ms = 0;  ///< wall time of the whole run
  int connections = 0;    ///< connections that completed a handshake (incl. the first)

  std::string negotiated_protocol;  ///< SSL_get_version of the first handshake, e.g. "TLSv1.3"
  std::string cipher;               ///< e.g. "TLS_AES_256_GCM_SHA384"
  std::string group;                ///< key exchange group, e.g. "X25519"; "" when unknown
  std::string alpn;                 ///< negotiated ALPN protocol, "" when none
};

/// "TLS 1.3", "TLS 1.2 tickets" or "TLS 1.2 session IDs": how reports name a run.
std::string run_label(const run_result& r);

/// Everything measured for one target.
struct target_result {
  std::string target;   ///< as given
  std::string address;  ///< "ip:port" dialled ("[v6]:port" for IPv6), "" when unresolved
  std::string sni;      ///< SNI sent ("" = none)
  std::optional<std::string> error;  ///< why the target could not be probed; null when it was
  std::vector<run_result> protocols;
  std::optional<certificate_facts> certificate;  ///< the certificate module's part
  ocsp_result ocsp;                              ///< the OCSP module's part
  std::optional<load_result> load;               ///< the load driver's part (only with --load)
  std::optional<keepalive_close> keepalive;      ///< the close module's part (--keepalive-wait)
  /// The QUIC probe (--quic, or an Alt-Svc with h3 on the same host); null when it did not run.
  std::optional<quic_result> quic;
  double elapsed_ms = 0;
  /// The headers module's part: the header fields of the first complete response to the
  /// probe's `HEAD /` (names as sent, values trimmed), in order; empty with --no-http or when
  /// no response ended its header section within max_response_head_bytes.
  std::vector<std::pair<std::string, std::string>> response_headers;
};

}  // namespace ngxtls::probe
