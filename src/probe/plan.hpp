#pragma once
// The plan's state for one target and its runs, as the loop (prober.cpp) keeps it and the
// measurement modules read it. Internal to src/probe.

#include <sys/socket.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/connection.hpp"
#include "probe/prober.hpp"
#include "probe/results.hpp"
#include "probe/session_file.hpp"

namespace ngxtls::probe {

/// A measurement module's working state for one target (scratch that is not part of the
/// result: counters, sessions, memos). Dropped when the target is finished.
struct module_state {
  virtual ~module_state() = default;
};

/// One run of a target: which protocol and mechanism, the sessions it offers and its counters.
struct run_state {
  tls_protocol protocol = tls_protocol::tls1_3;
  resumption_mechanism mechanism = resumption_mechanism::ticket;
  SSL_CTX* ctx = nullptr;           ///< the client context of this protocol and mechanism
  SSL_CTX* strict_ctx = nullptr;    ///< the same, without SSL_OP_IGNORE_UNEXPECTED_EOF
  run_result res;                   ///< the result, filled by the plan and the modules
  session_ptr base;                 ///< offered in same_session mode
  session_ptr latest;               ///< newest session, offered in fresh_tickets mode
  std::vector<session_ptr> unused;  ///< fresh_tickets: tickets not offered yet, newest last
  bool started = false, first_done = false, skip_attempts = false, finished = false;
  int launched = 0;        ///< attempts launched
  int completed = 0;       ///< attempts finished
  int in_flight = 0;       ///< connections of this run not finished
  int extra_launched = 0;  ///< extra full handshakes (role sample) launched
  time_point started_at;
  // After the attempts, one stage after another, each waiting for the one before to end.
  session_ptr chain_next;  ///< chain: the ticket to offer next (first: one from a resumed attempt)
  int chain_launched = 0;  ///< chain connections launched
  bool strict_started = false;     ///< the strict-client run's first connection launched
  bool strict_first_done = false;  ///< and finished
  session_ptr strict_base;         ///< its session after reading to EOF (null: none)
  int strict_launched = 0;         ///< strict-client attempts launched
  int early_stage = 0;             ///< early data: 0 not started, 1 setup, 2 first, 3 replay,
                                   ///< 4 two at once, 5 done
  session_ptr early_ticket;        ///< the setup handshake's newest ticket that allows 0-RTT
};

/// Where a target is in its plan.
enum class target_stage { waiting, runs, retries, finished };

/// The Host (HTTP/1.1) or :authority (HTTP/3) the probe's requests name: the SNI, else the host,
/// with the port when it is not 443.
std::string http_authority(const target& t);

/// The QUIC probe of `t` after its TCP probe `r` (its Alt-Svc header picks the port), as
/// `options.quic` says; sets `r.quic` when it ran.
void probe_quic(const target& t, target_result& r, const probe_options& options);

/// The request sent after each handshake: `HEAD /` with the name the server is asked for.
std::string http_request(const target& t);

/// Resolves where `t` is dialled into `addr`; the error text when it cannot be resolved.
std::optional<std::string> resolve_target(const target& t, sockaddr_storage& addr,
                                          socklen_t& addr_len);

/// One target being probed.
struct target_state {
  const probe_options* options = nullptr;
  target t;
  target_result res;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::string request;  ///< the HTTP request sent after each handshake (with options->http)
  std::vector<run_state> runs;
  std::size_t run = 0;  ///< the run in progress
  int in_flight = 0;
  target_stage stage = target_stage::waiting;
  time_point started, deadline, next_retry_at;
  SSL_CTX* working_ctx = nullptr;   ///< a context whose handshake succeeded (for retries)
  bool keepalive_launched = false;  ///< the keep-alive connection (keepalive_wait_ms) opened
  std::optional<std::string> first_error;
  /// One state per registered module, in registry order (null when a module keeps none).
  std::vector<std::unique_ptr<module_state>> module_states;
};

}  // namespace ngxtls::probe
