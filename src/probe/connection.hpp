#pragma once
// One non-blocking TLS client connection: TCP connect, TLS handshake, an optional HTTP request
// and a bounded read, each phase under the connection's timeout. It knows nothing of runs or
// measurements: the loop (prober.cpp) steps it when poll() says so and hands it, finished, to
// the measurement modules.

#include <openssl/ssl.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "probe/session_file.hpp"
#include "probe/tls_events.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::probe {

struct target_state;  // plan.hpp

/// The prober's clock (monotonic).
using clock_type = std::chrono::steady_clock;
/// A point on the prober's clock.
using time_point = clock_type::time_point;

/// Milliseconds from `a` to `b`.
double ms_between(time_point a, time_point b);

/// The most bytes of a response's header section a connection keeps (connection::
/// response_head); a longer section is not parsed.
inline constexpr std::size_t max_response_head_bytes = 16384;

/// What a connection may do and for how long (taken from probe_options).
struct connection_limits {
  int timeout_ms = 0;                  ///< connect + handshake + reading, ms
  int idle_ms = 0;                     ///< stop reading after this long without data, ms
  std::size_t max_response_bytes = 0;  ///< bytes read after the handshake
  std::size_t max_tickets = 0;         ///< session tickets kept; more fail the connection
  bool http = false;                   ///< send the request after the handshake
  /// Without `http`: end at the handshake, not reading TLS 1.3 tickets (the load driver).
  bool stop_after_handshake = false;
  /// End a completed connection with a TCP reset and no close_notify (the load driver, as
  /// `openssl s_time`): the client keeps no TIME_WAIT socket (one ephemeral port for 60 s per
  /// connection would run a remote load out of ports at some 470 connections/s) and the server
  /// does no shutdown work that is not the handshake's.
  bool abortive_close = false;
  /// With `http`: after the response's header section, keep reading until the server closes
  /// (or `idle_ms` passes), to record how it closed (connection::peer_close).
  bool read_to_close = false;
};

/// A client SSL_CTX for exactly one protocol `version` (TLS1_2_VERSION or TLS1_3_VERSION),
/// with the ticket extension off when `no_ticket`, ALPN http/1.1 when `alpn_http`, peer chains
/// bounded to `max_cert_list_bytes`, no verification (a prober measures, it does not trust) and
/// every new session handed to the connection that received it. Throws tls::openssl_error.
/// With `strict_eof` the context does not set SSL_OP_IGNORE_UNEXPECTED_EOF: a TCP close without
/// close_notify after the handshake is a fatal error, as for OpenSSL-based clients that keep
/// OpenSSL's default (the strict-client run). Every context records received close_notify
/// alerts (connection::close_notify_received).
tls::ssl_ctx_ptr make_client_context(int version, bool no_ticket, bool alpn_http,
                                     long max_cert_list_bytes, bool strict_eof = false);

/// Where a connection is.
enum class connection_phase { connecting, handshaking, writing, reading, done };

/// Why a connection was opened: the plan's roles.
enum class connection_role {
  first,    ///< a run's first full handshake: it gives the session to resume
  sample,   ///< an extra full handshake (more tickets to see key names repeat)
  attempt,  ///< a resumption attempt offering a session
  retry,    ///< an extra full handshake after the runs (a module asked: OCSP staples)
  chain,    ///< offers the newest ticket of the previous connection, starting with one received
            ///< on a resumed attempt
  strict_first,    ///< the strict-client run's full handshake (reads to EOF, strict EOF)
  strict_attempt,  ///< a strict-client resumption attempt offering strict_first's session
  early_setup,     ///< a full handshake giving the ticket the early-data offers use
  early_first,     ///< the first offer of that ticket, with early data
  early_replay,    ///< the same ticket and early data again, after early_first
  early_parallel,  ///< the same ticket and early data, two connections at once
  keepalive,       ///< a keep-alive `HEAD /`, then waiting for the server to close (no run)
};

/// True for the roles after a run's attempts (chain, strict client, early data): their own
/// modules fold them; they are not the run's attempts, samples or timings.
inline bool is_follow_up(connection_role r) {
  return r != connection_role::first && r != connection_role::sample &&
         r != connection_role::attempt && r != connection_role::retry &&
         r != connection_role::keepalive;
}

/// One connection and what it saw. Finished (phase done) when it completed or failed.
struct connection {
  connection() = default;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection();

  // Set by who opens it.
  const connection_limits* limits = nullptr;  ///< the prober's, outlives the connection
  std::string address;                        ///< "ip:port" dialled, for error texts
  std::string request;                        ///< sent after the handshake when limits->http
  bool tls13 = false;             ///< the context speaks TLS 1.3 (tickets come after the handshake)
  target_state* owner = nullptr;  ///< the plan's target it belongs to
  std::size_t run_index = 0;      ///< the run it belongs to (role retry: none)
  connection_role role = connection_role::first;  ///< why the plan opened it
  int attempt_index = -1;                         ///< role attempt: its place in launch order
  /// The client treats EOF without close_notify as an error (strict-client run) and keeps the
  /// session OpenSSL holds after reading to EOF in session_after_close.
  bool strict = false;
  /// Sent as early data (0-RTT) when the offered session allows it ("" = none); the request is
  /// then not sent again unless the server rejects the early data.
  std::string early_data;
  /// Reading stops after this long without data instead of limits->idle_ms (0: the limit's).
  int idle_ms = 0;

  // State.
  int fd = -1;                                            ///< the socket; -1 before it exists
  tls::ssl_ptr ssl;                                       ///< the TLS client of `fd`
  connection_phase phase = connection_phase::connecting;  ///< where it is
  time_point started;                                     ///< connect() called
  time_point deadline;                                    ///< started + timeout
  time_point last_data;                                   ///< last bytes (or ticket) read
  bool want_write = false;         ///< libssl waits for the socket to be writable
  std::size_t request_off = 0;     ///< bytes of `request` written
  std::string tail;                ///< last bytes read, to find the end of the HTTP headers
  std::string status_line;         ///< the response's first bytes, for its status code
  std::size_t bytes_read = 0;      ///< bytes read after the handshake
  bool too_many_sessions = false;  ///< the server sent more tickets than limits->max_tickets
  std::size_t early_off = 0;       ///< bytes of `early_data` written
  /// After the early data: the client's Finished waits until then, so that the server reads
  /// the request while the handshake is still open, as from a replaying attacker who cannot
  /// finish it (nginx's $ssl_early_data is "1" only before the handshake completes).
  std::optional<time_point> early_hold_until;

  // What it saw.
  std::vector<session_ptr> sessions;  ///< from the new-session callback, in arrival order
  bool handshake_ok = false;          ///< the TLS handshake completed
  bool reused = false;                ///< SSL_session_reused() == 1
  std::optional<std::string> error;   ///< why it failed; null when it did not
  std::optional<int> http_status;     ///< e.g. 421 for a session from another name
  /// The response's header section as read, at most max_response_head_bytes (the headers
  /// module parses it).
  std::string response_head;
  bool head_complete = false;          ///< response_head ends with the blank line
  bool response_complete = false;      ///< the response's header section was read to its end
  bool stapled = false;                ///< the handshake carried an OCSP staple
  bool close_notify_received = false;  ///< a close_notify alert arrived
  peer_close closed_by = peer_close::not_seen;              ///< how the server ended the connection
  std::optional<time_point> closed_at;                      ///< when it did
  early_data_outcome early = early_data_outcome::not_sent;  ///< what became of `early_data`
  /// strict: SSL_get1_session after reading to EOF (null when none), as a client that takes its
  /// session at the end keeps it.
  session_ptr session_after_close;
  std::string negotiated_protocol, cipher, group,
      alpn;                                   ///< of the handshake (SSL_get_version, ...)
  std::optional<time_point> connected_at;     ///< TCP connected
  std::optional<time_point> handshake_at;     ///< TLS handshake completed
  std::optional<time_point> request_sent_at;  ///< request fully written
  std::optional<time_point> first_byte_at;    ///< first byte of the response read
};

/// Starts `c` at `now`: a non-blocking socket to `addr`, an SSL of `ctx` with `sni` (none when
/// empty), a status_request when `ask_staple`, and a copy of `offer` as the session to resume
/// (null: a full handshake). Failures end the connection with an error text.
void open_connection(connection& c, const sockaddr_storage& addr, socklen_t addr_len, SSL_CTX* ctx,
                     const std::string& sni, bool ask_staple, SSL_SESSION* offer, time_point now);

/// Advances `c` as far as the socket allows (after poll() reported it ready).
void step(connection& c);

/// The poll() events `c` waits for (0 when finished).
short poll_events(const connection& c);

/// When `c` must be looked at again even without socket activity.
time_point wake_time(const connection& c);

/// How long a connection that sent early data holds back its Finished, ms.
inline constexpr int early_data_hold_ms = 100;

/// Ends `c` when its time is up at `now`: reading went quiet (a normal end), or the timeout
/// passed (an error naming the phase).
void check_time(connection& c, time_point now);

/// Ends `c` with the error `why` (no-op when already finished).
void fail(connection& c, std::string why);

}  // namespace ngxtls::probe
