#pragma once
// The load module's part of a target's result: handshake capacity measured by the load driver
// (probe/load.hpp) with fresh TCP connections, and QUIC connections where the QUIC probe made
// one, for a bounded time, per phase (full handshakes, TLS 1.3 PSK, TLS 1.2 ticket, TLS 1.2
// session ID, full and resumed QUIC), and what resumption and the certificate choice are worth
// in handshakes per second.

#include <optional>
#include <string>
#include <vector>

#include "probe/timing.hpp"

namespace ngxtls::probe {

/// What a load phase's connections do.
enum class load_phase_kind {
  full_tls13,        ///< TLS 1.3 full handshakes (no session offered)
  full_tls12,        ///< TLS 1.2 full handshakes (no session offered, no ticket asked)
  psk_tls13,         ///< TLS 1.3 resumed by PSK (a ticket from one full handshake)
  ticket_tls12,      ///< TLS 1.2 resumed by session ticket
  session_id_tls12,  ///< TLS 1.2 resumed by session ID (ticket extension off)
  full_quic,         ///< QUIC (TLS 1.3, ALPN h3) full handshakes on the QUIC probe's UDP port
  resumed_quic,      ///< QUIC resumed (a session from one full QUIC handshake)
};
/// "full_tls13", "full_tls12", "psk_tls13", "ticket_tls12", "session_id_tls12", "full_quic" or
/// "resumed_quic".
std::string to_string(load_phase_kind k);
/// True for the phases that offer a session.
bool is_resumed(load_phase_kind k);

/// Which certificates the client accepts, by the signature algorithms it offers.
enum class certificate_key {
  any,    ///< the client's default signature algorithms
  ecdsa,  ///< ECDSA signature algorithms only
  rsa,    ///< RSA (PSS and PKCS#1) signature algorithms only
};
/// "any", "ecdsa" or "rsa".
std::string to_string(certificate_key k);

/// How a planned load phase went.
enum class load_phase_state {
  ran,                  ///< ran for the load's whole duration
  interrupted,          ///< stopped by Ctrl-C partway: the figures cover the time until then
  server_stopped,       ///< ended early, or completed nothing: the server stopped answering
  not_run_interrupted,  ///< not started: Ctrl-C came first
  not_run_unanswered,   ///< not started: the server did not answer the handshake before it
  not_run_no_session,   ///< not started: the handshake before it gave no session to offer
};
/// "ran", "interrupted", "server_stopped", "not_run_interrupted", "not_run_unanswered" or
/// "not_run_no_session".
std::string to_string(load_phase_state s);

/// One phase: fresh TCP (or QUIC) connections of one kind for the load's duration.
struct load_phase_result {
  load_phase_kind kind = load_phase_kind::full_tls13;
  certificate_key key = certificate_key::any;
  load_phase_state state = load_phase_state::ran;
  /// Time the figures cover, s: while connections were launched; for a phase the server
  /// stopped answering, until its last completed connection.
  double elapsed_s = 0;
  int connections = 0;  ///< connections that completed (handshake, and the request)
  int resumed = 0;      ///< of those, resumed (SSL_session_reused(), QUIC: GnuTLS's)
  int failures = 0;     ///< connections that ended in an error (timeouts included)
  std::optional<std::string> last_error;  ///< text of the last failure
  double connections_per_s = 0;           ///< connections / elapsed_s
  timing_ms connect_ms;                   ///< connect() until TCP connected (QUIC: count 0)
  /// TCP connected until the TLS handshake completed; QUIC: first Initial until complete.
  timing_ms handshake_ms;
  timing_ms first_byte_ms;      ///< request written until the first byte (count 0 without request)
  double client_cpu_share = 0;  ///< client CPU time / (elapsed time * client threads), 0..1
  bool client_bound = false;    ///< the client's threads were busy: the client was the limit
};

/// What resumption is worth for one protocol: capacity at the measured resumption rate and
/// at full resumption, 1 / ((1 - r) / F + r / R).
struct resumption_price {
  load_phase_kind full = load_phase_kind::full_tls13;    ///< the phase giving F
  load_phase_kind resumed = load_phase_kind::psk_tls13;  ///< the phase giving R
  double resumption_rate = 0;        ///< r, from the ordinary probe (QUIC: the QUIC probe's)
  double full_per_s = 0;             ///< F
  double resumed_per_s = 0;          ///< R
  double today_per_s = 0;            ///< at rate r
  double full_resumption_per_s = 0;  ///< at rate 1 (= R)
  double gain = 0;                   ///< full_resumption_per_s / today_per_s - 1
};

/// What the certificate choice is worth: full-handshake capacity with each key type.
struct certificate_price {
  load_phase_kind phase = load_phase_kind::full_tls13;  ///< the full phase measured twice
  double ecdsa_per_s = 0;                               ///< full handshakes/s, ECDSA only
  double rsa_per_s = 0;                                 ///< full handshakes/s, RSA only
  double gain = 0;                                      ///< ecdsa_per_s / rsa_per_s - 1
};

/// The load module's part of a target (present only with --load).
struct load_result {
  double duration_s = 0;           ///< per phase, as asked
  int concurrency = 0;             ///< connections in flight
  std::optional<double> max_rate;  ///< connections/s cap, when asked
  bool request = false;            ///< one HTTP request per connection
  int client_threads = 0;          ///< event loops, one per client core
  /// QUIC connections in flight in the QUIC phases (min(-c, 64)); 0 without QUIC phases.
  int quic_concurrency = 0;
  bool interrupted = false;  ///< stopped early (SIGINT): the figures are partial
  std::vector<load_phase_result> phases;
  std::vector<resumption_price> prices;          ///< per protocol where both F and R were measured
  std::optional<certificate_price> certificate;  ///< when the server offers RSA and ECDSA
};

/// True when `p` gives no capacity to trust: it did not run, the server stopped answering in
/// it, or no connection completed. An interrupted phase with connections is measured (partly).
bool unmeasured(const load_phase_result& p);

}  // namespace ngxtls::probe
