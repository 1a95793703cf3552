#pragma once
// The tickets module's part of a run's result: the session tickets (and TLS 1.2 session IDs)
// received on every connection of the run, their sizes and ticket key names.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace ngxtls::probe {

/// Tickets of at most this many bytes carry only a session ID (OpenSSL's stateful TLS 1.3
/// tickets are 32 bytes: test_probe_nginx "tickets off without a session cache"); longer ones
/// hold the sealed session.
inline constexpr std::size_t stateful_ticket_max_bytes = 48;

/// Tickets received over one run.
struct tickets_part {
  int tickets = 0;            ///< NewSessionTicket messages (sessions with a ticket) received
  int stateful_tickets = 0;   ///< tickets of <= 48 bytes: a session ID, needs the server cache
                              ///< (nginx with tickets off sends 32-byte TLS 1.3 tickets:
                              ///< test_probe_nginx "tickets off without a
                              ///< session cache")
  int stateless_tickets = 0;  ///< longer tickets: the session sealed under a ticket key
  std::size_t ticket_min_bytes = 0, ticket_max_bytes = 0;  ///< sizes seen, bytes
  std::map<std::string, int> ticket_key_names;  ///< first 16 bytes (hex) -> tickets, only
                                                ///< prefixes that repeat across tickets; equals the
                                                ///< ssl_session_ticket_key file's first 16 bytes
                                                ///< (test_probe_keys "key rotation")
  int opaque_tickets = 0;  ///< stateless tickets whose first 16 bytes never repeat, or all of
                           ///< them when the resumption results contradict the key names
  /// Why the tickets are reported opaque although prefixes repeat (the resumption rate is far
  /// above 1/N for N "key names"); null otherwise.
  std::optional<std::string> opaque_reason;
  /// Ticket lifetime hint, seconds (last seen). 0 means "unspecified" in TLS 1.2 (RFC 5077
  /// section 3.3) and "discard at once" in TLS 1.3 (RFC 8446 section 4.6.1).
  std::optional<std::uint32_t> lifetime_hint_s;
  double tickets_per_connection = 0;  ///< tickets / connections that completed a handshake
  int max_tickets_per_connection = 0;
  std::uint32_t max_early_data = 0;  ///< max_early_data of the tickets (bytes; 0 = no 0-RTT)
};

}  // namespace ngxtls::probe
