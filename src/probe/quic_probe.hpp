#pragma once
// The QUIC probe of one target: full handshakes, resumption attempts offering the first
// connection's session as the TCP runs do, ticket key names and lifetime, Retry and NEW_TOKEN
// (address validation), and with --early-data the request as 0-RTT, once and replayed. Each
// connection is a quic_connection (quic_connection.hpp), one after another.

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probe/modules/early_data.hpp"
#include "probe/quic_connection.hpp"
#include "probe/timing.hpp"

namespace ngxtls::probe {

/// Why the QUIC probe of a target ran.
enum class quic_trigger {
  asked,    ///< --quic
  alt_svc,  ///< the TCP response advertised h3 in Alt-Svc on the same host
};
/// "asked" or "alt_svc".
std::string to_string(quic_trigger t);

/// What an endpoint gave a client to bring back on its next connection: the newest NEW_TOKEN
/// token (address validation) and the first connection's session (a session ticket).
struct quic_credentials {
  std::vector<unsigned char> token;     ///< empty: no NEW_TOKEN came
  std::optional<quic_session> session;  ///< null: no session to resume
};

/// Connections that each offered one token and session (the NEW_TOKEN token and session ticket
/// of an earlier connection): did the server take the token (no Retry) and resume the session?
struct quic_token_offers {
  int offered = 0;    ///< connections made with the token (and the session, when there is one)
  int completed = 0;  ///< of them, handshakes completed
  int retried = 0;    ///< of them, answered with a Retry although they sent the token
  /// Connections the server closed with INVALID_TOKEN (0xb) before any handshake: nginx's
  /// answer to a token sealed with another host key ("cannot decrypt token").
  int invalid_token = 0;
  int resumed = 0;                  ///< of them, resumed the session
  std::vector<std::string> errors;  ///< the first few errors of those that failed, distinct
};

/// What the QUIC probe of one target measured (the target's `quic` in docs/probe-json.md).
struct quic_result {
  quic_trigger trigger = quic_trigger::asked;
  std::string address;                       ///< "ip:port" of the UDP socket dialled
  std::optional<std::string> alt_svc;        ///< the Alt-Svc header value that named it (alt_svc)
  std::optional<std::string> error;          ///< why nothing could be measured; null when it could
  bool handshake_ok = false;                 ///< at least one QUIC handshake completed
  std::string alpn, cipher, group, version;  ///< of the first handshake
  int full_handshakes = 0;                   ///< full handshakes completed (first and samples)
  int attempts = 0;                          ///< resumption attempts made
  int resumed = 0;                           ///< of them, resumed
  double rate = 0;                           ///< resumed / attempts (0 without attempts)
  int failed_connections = 0;                ///< connections that ended with an error
  std::vector<std::string> errors;           ///< the first few of those errors, distinct
  int tickets = 0;                           ///< NewSessionTicket messages over all connections
  int stateful_tickets = 0;                  ///< tickets of <= 48 bytes (a session ID, no key name)
  /// Of the stateless tickets, distinct first 16 bytes, in the order first seen.
  std::vector<std::string> ticket_key_names;
  std::optional<std::uint32_t> ticket_lifetime_hint_s;  ///< of the first ticket
  std::optional<std::uint32_t> max_early_data;          ///< of the first ticket (0: no 0-RTT)
  bool retry = false;               ///< a connection without a token was answered with Retry
  bool new_token_received = false;  ///< a connection got a NEW_TOKEN frame
  /// With the NEW_TOKEN token of an earlier connection, the server still sent a Retry
  /// (true: the token did not validate the address; null: not measured).
  std::optional<bool> retry_with_token;
  std::optional<bool> token_resumed;  ///< that connection (offering the session too) resumed
  /// The token and session of an earlier connection offered quic_probe_options::token_offers
  /// times (repeated offers reach every instance behind a shared reuseport socket); null when no
  /// NEW_TOKEN came. retry_with_token and token_resumed are its first offer's.
  std::optional<quic_token_offers> token_offers;
  /// quic_probe_options::carried (taken before a reload, or from another endpoint) offered
  /// before this probe's own first connection; null when none was given.
  std::optional<quic_token_offers> carried;
  /// What this endpoint gave to bring back (its newest token, its first session), for a later
  /// probe's `carried`. Not part of the JSON: a session is a secret.
  quic_credentials credentials;
  std::map<int, int> http_statuses;  ///< HTTP/3 :status -> connections
  timing_ms full_handshake_ms;       ///< first Initial until handshake complete, full
  timing_ms resumed_handshake_ms;    ///< the same, resumed attempts
  /// --early-data: the request as 0-RTT with a ticket that allows it, once and replayed.
  bool early_data_tried = false;
  early_data_try early_first;               ///< the ticket's first 0-RTT use
  early_data_try early_replay;              ///< the same ticket and 0-RTT request again
  bool early_replay_answered = false;       ///< the replay accepted and answered (not 425)
  std::optional<double> early_response_ms;  ///< early_first: first Initial until the response
  double elapsed_ms = 0;                    ///< the whole QUIC probe
};

/// How to probe QUIC on a target.
struct quic_probe_options {
  int attempts = 20;      ///< resumption attempts (-n)
  int samples = 3;        ///< extra full handshakes after the first (key names, timings)
  int timeout_ms = 5000;  ///< per connection
  /// The whole QUIC phase of one target (--total-timeout); 0 for no bound beyond timeout_ms.
  int total_timeout_ms = 0;
  bool http = true;         ///< an HTTP/3 HEAD / on every connection
  bool early_data = false;  ///< --early-data
  std::string sni;          ///< name sent ("" = none)
  std::string authority;    ///< the request's :authority
  /// Set by Ctrl-C or SIGTERM: the connection in flight ends within 100 ms and no other starts
  /// (the result's error says the probe was interrupted); null: never stopped.
  const std::atomic<bool>* stop = nullptr;
  /// Connections offering the NEW_TOKEN token (with the first session) after the attempts.
  int token_offers = 8;
  /// Credentials from elsewhere (before a reload, another instance), offered `token_offers`
  /// times before anything else; null: none.
  const quic_credentials* carried = nullptr;
};

/// Probes QUIC on `addr` (a UDP address) as `o` says. Never throws for what the server does.
quic_result run_quic_probe(const sockaddr_storage& addr, socklen_t addr_len,
                           const quic_probe_options& o);

/// The port an `Alt-Svc` header value advertises for h3 on the same host (`h3=":443"`, or with
/// the host named `same_host`); null when it advertises none there.
std::optional<int> alt_svc_h3_port(const std::string& value, const std::string& same_host);

}  // namespace ngxtls::probe
