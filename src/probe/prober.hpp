#pragma once
// The live prober's entry point: libssl on non-blocking sockets (connection.hpp), one poll()
// loop and a plan of connections per target (prober.cpp), and one module per measurement
// (measurement.hpp, modules/): resumption per protocol and mechanism, tickets and key names,
// OCSP staples, the certificate, where a connection's time goes. It knows nothing of nginx
// configs.

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "probe/results.hpp"
#include "probe/target.hpp"

namespace ngxtls::probe {

/// Progress of a probe, for a progress bar: connections finished / planned (planned grows
/// when OCSP retries are added).
struct progress {
  int done = 0;
  int planned = 0;
  int targets_done = 0;
  int targets = 0;
};

/// A target's `error` when probe_options::stop ended its probe.
inline constexpr const char* probe_interrupted_error = "interrupted before the probe finished";

/// When the QUIC probe runs after a target's TCP probe.
enum class quic_mode {
  alt_svc,  ///< when the TCP response advertises h3 in Alt-Svc on the same host (the default)
  always,   ///< --quic: on the Alt-Svc port, or the target's port without one
  never,    ///< --no-quic
};

/// How to probe. The defaults here are the only ones: the CLI reads them from a
/// default-constructed probe_options.
struct probe_options {
  int attempts = 20;              ///< -n: resumption attempts per run
  int per_target = 4;             ///< -c: connections in flight per target
  int parallel = 16;              ///< --parallel: targets probed at once
  bool tls12 = true;              ///< run TLS 1.2 (ticket and session_id)
  bool tls13 = true;              ///< run TLS 1.3
  int timeout_ms = 5000;          ///< --timeout: per connection (connect + handshake + reading), ms
  int total_timeout_ms = 120000;  ///< per target, ms; what is left unfinished then is an error
  bool http = true;               ///< send `HEAD / HTTP/1.1` after the handshake (--no-http: don't)
  bool fresh_tickets = false;     ///< offer the newest ticket each attempt (browsers' way)
  /// Same-session ticket runs: after the attempts, this many connections one after another,
  /// each offering the newest ticket of the one before, the first a ticket received on a
  /// resumed attempt (a ticket issued on a resumed connection must resume too). 0 = none.
  int chain_offers = 4;
  /// With `http`: after the attempts, the strict-client run: a full handshake and `attempts`
  /// attempts as a client that reads each response to EOF without SSL_OP_IGNORE_UNEXPECTED_EOF
  /// and offers the session OpenSSL holds at the end (--no-strict-client: don't).
  bool strict_client = true;
  /// --early-data: TLS 1.3 runs whose tickets allow early data send the request (`HEAD /`,
  /// no body) as 0-RTT: once, again with the same ticket, and from two connections at once.
  /// A write to the server: only when asked for (and in check --sandbox).
  bool early_data = false;
  /// --keepalive-wait: with `http`, one more connection per target sends a keep-alive
  /// `HEAD /` and waits up to this long after the response for the server to close it (nginx:
  /// keepalive_timeout), recording whether close_notify came first; ms, 0 = no such connection.
  int keepalive_wait_ms = 0;
  /// The QUIC probe (probe/quic_probe.hpp): its handshakes, resumption attempts (`attempts`),
  /// Retry and NEW_TOKEN, and 0-RTT with `early_data`.
  quic_mode quic = quic_mode::alt_svc;
  /// A QUIC token and session taken earlier (check --sandbox --reload: before the reload),
  /// offered before the QUIC probe's own connections (quic_probe_options::carried); null: none.
  const quic_credentials* quic_carried = nullptr;
  bool ocsp = true;                        ///< ask for staples (--no-ocsp: don't)
  int ocsp_min_wait_ms = 2000;             ///< keep retrying at least this long before "absent", ms
  int ocsp_min_connections = 4;            ///< and at least this many connections
  std::size_t max_response_bytes = 65536;  ///< bytes read per connection after the handshake
  int idle_ms = 500;                       ///< stop reading after this long without data, ms
  /// Session tickets kept per connection; a server that sends more fails that connection
  /// (each ticket is an SSL_SESSION of a few KiB: an endless stream must not grow memory).
  std::size_t max_tickets_per_connection = 64;
  /// Certificate chain bytes accepted in a handshake (SSL_CTX_set_max_cert_list; OpenSSL's
  /// default is the same 100 KiB, set here so the limit is ours and documented).
  long max_cert_list_bytes = 100 * 1024;
  /// --sess-in: PEM session file; runs of its protocol offer it instead of a first handshake.
  std::optional<std::string> sess_in;
  /// --sess-out: PEM file (mode 0600) for the first session of the first run of the first target.
  std::optional<std::string> sess_out;
  /// Set (from a signal handler) to stop at once: every unfinished target ends with `error`
  /// set to probe_interrupted_error, the runs measured until then kept.
  const std::atomic<bool>* stop = nullptr;
  /// Called from the loop thread after every finished connection (may be empty).
  std::function<void(const progress&)> on_progress;
};

/// Probes every target (at most `parallel` at once) and returns one result per target in
/// input order. Per target the runs (TLS 1.3 ticket, TLS 1.2 ticket, TLS 1.2 session_id) go one
/// after another, each: one full handshake, then `attempts` resumption attempts on fresh TCP
/// connections with `per_target` in flight, then (ticket runs) up to 24 extra full handshakes
/// while a ticket key name was seen only once; then, while no staple arrived, OCSP retries.
/// What this measures on nginx is asserted in tests/integration/test_probe_nginx.cpp (builtin
/// cache per worker, one master's workers share ticket keys, two masters: about 1/N).
/// Sets SIGPIPE to SIG_IGN for the process (a peer reset while writing must not kill it).
/// Returns one result per target in input order. A target that cannot be probed (no address,
/// TCP refused, no TLS handshake in any protocol, a hostile peer, the total deadline) has
/// `error` set. Throws ngxtls::input_error for an unreadable --sess-in or unwritable --sess-out
/// file, ngxtls::target_error when --sess-out was asked but no handshake gave a session
/// although the target was probed (when the target has `error` set, nothing is written).
std::vector<target_result> run_probe(const std::vector<target>& targets,
                                     const probe_options& options);

}  // namespace ngxtls::probe
