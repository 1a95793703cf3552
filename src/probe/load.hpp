#pragma once
// The load driver: handshake capacity of one endpoint. Fresh TCP connections, one kind per
// phase, for a bounded time, on the prober's connection code (connection.hpp), one poll() loop
// per client thread. Which phases run follows the ordinary probe's result of the same target:
// a resumed phase only where that run resumed at all. The figures are the load module's part
// of the target (modules/load.hpp); the module renders them.

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "probe/prober.hpp"

namespace ngxtls::probe {

/// Longest phase a load may ask for, s.
inline constexpr int max_load_duration_s = 120;

/// How a running load phase stands, for a progress line.
struct load_tick {
  std::string phase;     ///< its report name (phase_label)
  double elapsed_s = 0;  ///< since it started, s
  int duration_s = 0;    ///< its planned length, s
  int connections = 0;   ///< handshakes completed in it so far
};

/// "NAME: 3 s left, 812 handshakes/s (2436 so far)": the countdown (whole seconds, rounded up)
/// and the phase's rate so far, for a progress line.
std::string tick_text(const load_tick& t);

/// Most QUIC connections in flight in a QUIC phase (each waits on a thread of its own): -c, up
/// to this many.
inline constexpr int max_quic_load_connections = 64;

/// QUIC connections in flight for `-c` `concurrency`.
inline int quic_load_workers(int concurrency) {
  return concurrency < 1
             ? 1
             : (concurrency > max_quic_load_connections ? max_quic_load_connections : concurrency);
}

/// Interval between two load_options::on_tick calls, ms.
inline constexpr int load_tick_ms = 250;

/// How to load an endpoint.
struct load_options {
  int duration_s = 10;             ///< --duration: per phase, 1..max_load_duration_s
  int concurrency = 16;            ///< -c: connections in flight, over all threads
  std::optional<double> max_rate;  ///< --max-rate: connections/s over all threads
  bool request = false;            ///< --request: one `HEAD /` per connection
  int threads = 0;                 ///< event loops; 0 = one per client core
  int timeout_ms = 5000;           ///< per connection (connect + handshake + response), ms
  long max_cert_list_bytes = probe_options{}.max_cert_list_bytes;  ///< as the prober's
  /// Set (from a signal handler) to stop at once; the phases measured so far are kept.
  const std::atomic<bool>* stop = nullptr;
  /// Told the phases planned, as report names ("full TLS 1.3", ...), before the first starts
  /// (may be empty).
  std::function<void(const std::vector<std::string>&)> on_plan;
  /// Told the name of each phase as it starts (may be empty).
  std::function<void(const std::string&)> on_phase;
  /// Told how the running phase stands, about every load_tick_ms while it runs, on the thread
  /// that called run_load (may be empty: then nothing is counted for it).
  std::function<void(const load_tick&)> on_tick;
};

/// A phase ends early when no connection completed for this long while connections failed
/// (at least this long; with --max-rate, at least four launch intervals), ms.
inline constexpr int server_stopped_after_ms = 1000;

/// Loads `t` after its ordinary probe `probed`. The plan: full handshakes per protocol the
/// server speaks, each resumption mechanism that resumed in `probed`, and, where two
/// handshakes restricted to each key type show the server offers both RSA and ECDSA
/// certificates, full handshakes restricted to each; then, where `probed`'s QUIC probe made a
/// handshake, full QUIC handshakes on its UDP socket, and resumed ones where it resumed. Then
/// prices resumption (per protocol, and QUIC) and the certificate choice from the phases
/// measured. Every planned phase is in the result with its
/// state: each ends `duration_s` after it started (connections still in flight then are given
/// their timeout and counted as failures when they fail); at once when `*stop` is set
/// (`interrupted`, the phases after it not run); or when the server stopped answering (no
/// connection completed for server_stopped_after_ms while connections failed): then a phase
/// after it runs only when one handshake to the server succeeds first.
load_result run_load(const target& t, const target_result& probed, const load_options& o);

/// Capacity at resumption rate `r` (0..1) with full capacity `full_per_s` and resumed
/// capacity `resumed_per_s`: 1 / ((1 - r) / F + r / R). 0 when either capacity is 0.
double capacity_at(double r, double full_per_s, double resumed_per_s);

/// Human name of a phase: "full TLS 1.3", "TLS 1.2 session ID", "full TLS 1.3, RSA".
std::string phase_label(load_phase_kind k, certificate_key key = certificate_key::any);

}  // namespace ngxtls::probe
