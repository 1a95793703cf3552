#pragma once
// The timings module's part of a run's result: where a connection's time goes (TCP connect,
// TLS handshake, request to first byte), for full and resumed handshakes.

#include <optional>

#include "probe/timing.hpp"

namespace ngxtls::probe {

/// Where the time of one kind of connection goes, summarised over the run's connections of
/// that kind. Each connection is timed from its connect() call.
struct time_split {
  timing_ms connect_ms;        ///< TCP connect: connect() until the socket is connected
  timing_ms tls_handshake_ms;  ///< connected until the TLS handshake completes
  timing_ms first_byte_ms;     ///< request written until the response's first byte (HTTP only;
                               ///< count 0 with --no-http)
  timing_ms total_ms;          ///< connect() until the first byte (until the handshake
                               ///< completes with --no-http)
  /// Median over the connections of tls_handshake / total (0..1]; null without connections.
  std::optional<double> handshake_share;
};

/// Timings of one run.
struct timings_part {
  timing_ms full_handshake_ms;     ///< connect + handshake of non-resumed connections
  timing_ms resumed_handshake_ms;  ///< connect + handshake of resumed connections
  time_split full_time;            ///< full handshakes (the first, samples, unresumed attempts)
  time_split resumed_time;         ///< resumed attempts
};

}  // namespace ngxtls::probe
