#pragma once
// The early-data module's part of a TLS 1.3 run's result (only with --early-data, or check
// --sandbox): the request sent as 0-RTT with a fresh ticket, the same ticket and early data
// again, and from two connections at once.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "probe/tls_events.hpp"

namespace ngxtls::probe {

/// One connection that sent the request as early data.
struct early_data_try {
  bool tried = false;  ///< the connection was made
  early_data_outcome outcome = early_data_outcome::not_sent;
  std::optional<int> http_status;    ///< the status answered (to the early request if accepted)
  std::optional<std::string> error;  ///< why the connection failed; null when it did not
};

/// 0-RTT and its replay.
struct early_data_part {
  bool early_data_tried = false;    ///< the offers ran (--early-data and tickets allow it)
  early_data_try early_first;       ///< the ticket's first use, with early data
  early_data_try early_replay;      ///< the same ticket and early data, once more
  int early_parallel_sent = 0;      ///< connections offering it again at once (2)
  int early_parallel_accepted = 0;  ///< of those, the early data accepted
  std::map<int, int> early_parallel_statuses;  ///< their HTTP statuses, status -> connections
  /// A replayed first flight (early_replay or a parallel one) was accepted and answered by the
  /// application (a status other than 425 Too Early).
  bool early_replay_answered = false;
};

/// The try of a connection that sent early data: its outcome, status and error, or `no_handshake`
/// as the error when it failed without one (the TCP runs' and the QUIC probe's).
early_data_try early_try_of(early_data_outcome outcome, const std::optional<int>& http_status,
                            const std::optional<std::string>& error, bool handshake_ok,
                            const char* no_handshake);

/// `e` as docs/probe-json.md writes one early-data connection: `{"outcome", "http_status",
/// "error"}` (the TCP runs' and the QUIC probe's).
nlohmann::json early_try_json(const early_data_try& e);

}  // namespace ngxtls::probe
