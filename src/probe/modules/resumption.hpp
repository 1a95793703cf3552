#pragma once
// The resumption module's part of a run's result: did the offered session resume, attempt by
// attempt, and what did the server answer.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ngxtls::probe {

/// Resumption attempts of one run (SSL_session_reused() per attempt).
struct resumption_part {
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
  /// The chain (same_session ticket runs): connections one after another, each offering the
  /// newest ticket of the one before, the first a ticket received on a resumed attempt; per
  /// connection in order: resumed or not. Empty when no resumed attempt brought a ticket.
  std::vector<bool> chain_outcomes;
  int chain_resumed = 0;            ///< of chain_outcomes, how many resumed
  bool single_use_pattern = false;  ///< same_session mode: exactly one attempt resumed out of
                                    ///< >= 3 (tickets look single-use, RFC 8446 section 8.1)
};

}  // namespace ngxtls::probe
