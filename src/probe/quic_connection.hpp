#pragma once
// One QUIC client connection (ngtcp2 with its GnuTLS crypto backend) on a connected UDP
// socket: the handshake with ALPN h3, optionally an HTTP/3 `HEAD /` (as 0-RTT early data when
// asked and the offered session allows it), the NewSessionTicket messages and NEW_TOKEN frames
// the server sends, then a CONNECTION_CLOSE. Every connection has a deadline and every read is
// bounded; a server that sends garbage, nothing or too much ends the connection with an error
// text, never a hang. It knows nothing of runs: quic_probe.cpp plans the connections.

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/tls_events.hpp"

namespace ngxtls::probe {

/// A NewSessionTicket the server sent over QUIC, in the TLS 1.3 message's own terms.
struct quic_ticket {
  std::string key_name;               ///< first 16 bytes of the ticket, hex (nginx's key name)
  std::uint32_t lifetime_hint_s = 0;  ///< ticket_lifetime, seconds
  std::uint32_t max_early_data = 0;   ///< early_data extension's max_early_data_size (0: none)
  std::size_t size_bytes = 0;         ///< the ticket's length
};

/// What a later connection needs to resume a QUIC connection: GnuTLS's session data (with the
/// newest ticket) and the server's transport parameters, which 0-RTT must remember.
struct quic_session {
  std::vector<unsigned char> tls_data;  ///< gnutls_session_get_data2 after the newest ticket
  std::shared_ptr<const void> transport_params;  ///< the server's ngtcp2_transport_params
  std::uint32_t max_early_data = 0;              ///< of the ticket inside: 0-RTT allowed when > 0
};

/// How one QUIC connection is made.
struct quic_connection_options {
  std::string sni;        ///< server name sent ("" = none)
  int timeout_ms = 5000;  ///< the whole connection: handshake, request, tickets
  int quiet_ms = 50;      ///< after the handshake, end after this long with nothing new
  bool http = true;       ///< send an HTTP/3 `HEAD /` after (or in) the handshake
  std::string authority;  ///< the request's :authority
  const quic_session* offer = nullptr;  ///< the session to resume (null: a full handshake)
  bool early_data = false;              ///< send the request as 0-RTT when `offer` allows it
  std::vector<unsigned char> token;     ///< a NEW_TOKEN token to send in the Initial (empty: none)
  std::size_t max_tickets = 64;         ///< more NewSessionTicket messages fail the connection
  std::size_t max_datagrams = 4096;     ///< datagrams read before the connection gives up
  /// The load driver: end at the handshake, or with `http` at the response's HEADERS, without
  /// waiting for tickets.
  bool stop_after_handshake = false;
  /// Set (from a signal handler) to end the connection at once, with an error (may be null).
  const std::atomic<bool>* stop = nullptr;
};

/// The largest UDP datagram a connection reads; a bigger one is truncated and refused.
inline constexpr std::size_t max_quic_datagram_bytes = 65527;

/// What one QUIC connection saw.
struct quic_connection_result {
  bool handshake_ok = false;    ///< the QUIC handshake completed
  bool resumed = false;         ///< the TLS handshake resumed the offered session
  bool retry_received = false;  ///< the server answered the first Initial with a Retry
  early_data_outcome early = early_data_outcome::not_sent;  ///< what became of 0-RTT data
  std::optional<std::string> error;                         ///< why it failed; null when it did not
  std::optional<int> http_status;        ///< the HTTP/3 response's :status, when one was read
  std::vector<quic_ticket> tickets;      ///< NewSessionTicket messages, in arrival order
  std::optional<quic_session> session;   ///< to resume with (after the newest ticket)
  std::vector<unsigned char> new_token;  ///< the last NEW_TOKEN token (empty: none)
  std::string cipher, group, alpn;       ///< of the handshake, as GnuTLS names them
  std::string version;                   ///< QUIC version, e.g. "v1"
  /// The server's CONNECTION_CLOSE, when it sent one: error code and reason, e.g.
  /// "0x128 (CRYPTO_ERROR handshake_failure)".
  std::optional<std::string> server_close;
  double handshake_ms = 0;             ///< first Initial sent until the handshake completed
  double first_byte_ms = 0;            ///< request sent until the response's HEADERS (0: none)
  std::size_t datagrams_received = 0;  ///< datagrams read
  std::size_t bytes_received = 0;      ///< their bytes
};

/// Makes one QUIC connection to `addr` as `o` says and returns what it saw. Never throws for
/// what the server does; a local failure (no socket, GnuTLS or ngtcp2 setup) is an error text.
quic_connection_result run_quic_connection(const sockaddr_storage& addr, socklen_t addr_len,
                                           const quic_connection_options& o);

}  // namespace ngxtls::probe
