#pragma once
// The close module's part of a run's result: how the server ended its connections after a
// complete `HEAD /` exchange (TLS close_notify or a bare TCP close), and the strict-client run:
// the same attempts as a client that reads to EOF without ignoring an unexpected EOF.

#include <optional>
#include <string>

#include "probe/tls_events.hpp"

namespace ngxtls::probe {

/// How the server closed, and what a strict client resumes.
struct close_part {
  /// Connections of the run (first, samples, attempts) whose response was read to its end, by
  /// how the server then closed: close_notify, TCP close without it, reset, or not at all
  /// within the idle time.
  int closes_close_notify = 0, closes_eof = 0, closes_reset = 0, closes_not_seen = 0;
  bool strict_measured = false;  ///< the strict-client run ran (HTTP on, a session to offer)
  int strict_attempts = 0;       ///< strict attempts that completed a handshake
  int strict_resumed = 0;        ///< of those, resumed
  double strict_rate = 0;        ///< strict_resumed / strict_attempts (0 when none)
  int strict_failed = 0;         ///< strict attempts that ended in an error
  /// The strict first connection's session after reading to EOF could be resumed
  /// (SSL_SESSION_is_resumable); null when it left none.
  std::optional<bool> strict_session_resumable;
};

/// The keep-alive connection of a target (--keepalive-wait): a `HEAD /` without
/// "Connection: close", then reading until the server closes or the wait is over.
struct keepalive_close {
  int wait_ms = 0;                              ///< how long it would wait after the response
  peer_close closed_by = peer_close::not_seen;  ///< not_seen: still open when the wait ended
  std::optional<double> closed_after_ms;        ///< from the response's first byte to the close
  std::optional<std::string> error;             ///< why the connection failed; null when it did not
};

}  // namespace ngxtls::probe
