#pragma once
// What a connection can see happen after its handshake, as plain enums for the results
// (connection.hpp records them; the close and early-data modules count them).

#include <string>

namespace ngxtls::probe {

/// How the server ended a connection after the handshake, as the client saw it.
enum class peer_close {
  not_seen,      ///< the client ended it first (idle, timeout, an error) or never read to the end
  close_notify,  ///< TLS close_notify, then the TCP close
  eof,           ///< TCP close (FIN) without close_notify
  reset,         ///< TCP reset
};
/// "not_seen", "close_notify", "eof", "reset".
std::string to_string(peer_close k);

/// What became of early data (0-RTT) a connection sent.
enum class early_data_outcome {
  not_sent,  ///< no early data was sent
  accepted,  ///< the server accepted it (SSL_EARLY_DATA_ACCEPTED)
  rejected,  ///< the server rejected it; the request was sent again after the handshake
};
/// "not_sent", "accepted", "rejected".
std::string to_string(early_data_outcome k);

}  // namespace ngxtls::probe
