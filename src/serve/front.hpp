#pragma once
// The exporter's front: it owns every client connection (and its TLS, with OpenSSL), reads each
// request head under a deadline, checks it strictly (serve/request_head.hpp) and relays only
// well-formed requests, one at a time, to libmicrohttpd over a socket pair; it answers the
// others itself with one well-formed answer and closes. libmicrohttpd therefore never parses a
// byte the front has not checked, keep-alive and pipelined requests included.

#include <sys/socket.h>

#include <atomic>
#include <functional>
#include <memory>

using SSL_CTX = struct ssl_ctx_st;

namespace ngxtls::serve {

/// Client connections held at once. When all are taken, a new connection takes the slot of one
/// that is being drained after its last answer, else of the connection that has waited longest
/// for its request head to complete (an idle keep-alive connection, a client that sends nothing
/// or drips); when none is either, new connections wait in the listen backlog until a slot
/// frees.
inline constexpr unsigned max_http_connections = 512;

/// Bytes of an answer buffered for a client that does not read it, per connection: the front
/// stops reading libmicrohttpd's side until the client takes them.
inline constexpr std::size_t max_buffered_answer_bytes = 64 * 1024;

/// How long a refused or timed-out connection is drained (its further bytes read and dropped)
/// after the answer, so that the answer is not lost to a reset, ms.
inline constexpr int close_drain_ms = 1000;

/// Relays checked requests from clients on a listen socket to a libmicrohttpd daemon.
class front {
 public:
  /// Hands one end of a new socket pair to the HTTP daemon as a connection from `peer`; returns
  /// false when the daemon refused it (it then closed `fd`).
  using add_connection = std::function<bool(int fd, const sockaddr* peer, socklen_t peer_len)>;

  /// `listen_fd`: a bound, listening, non-blocking socket (not owned). `tls`: the server's
  /// certificate and key, or null for plain HTTP (referenced, not owned).
  front(int listen_fd, SSL_CTX* tls, add_connection add);
  ~front();
  front(const front&) = delete;
  front& operator=(const front&) = delete;

  /// Starts the front's thread.
  void start();
  /// Accepts no more connections (the listen socket may be closed after this returns).
  void stop_accepting();
  /// True while some connection waits for, or is being sent, an answer.
  bool answering() const;
  /// Ends the thread and closes every connection.
  void stop();

  /// A request head must be complete this long after the connection was accepted or its
  /// previous answer was sent (TLS handshake included), ms; read on every check, so a reload
  /// applies it at once.
  std::atomic<int> header_timeout_ms{10000};
  /// A connection waiting for a request that receives no byte for this long is closed, ms.
  std::atomic<int> idle_timeout_ms{5000};

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace ngxtls::serve
