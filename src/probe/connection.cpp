#include "probe/connection.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ngxtls::probe {

double ms_between(time_point a, time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

namespace {

// How long to keep reading for TLS 1.3 tickets after the last one arrived (--no-http), ms.
constexpr int ticket_quiet_ms = 50;

int on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* c = static_cast<connection*>(SSL_get_app_data(ssl));
  if (c == nullptr) return 0;
  if (c->sessions.size() >= c->limits->max_tickets) {
    c->too_many_sessions = true;  // returning 0 leaves the session to OpenSSL, which frees it
    return 0;
  }
  c->sessions.emplace_back(session);  // keeps the reference OpenSSL handed us
  return 1;
}

// Records a received close_notify alert: with SSL_OP_IGNORE_UNEXPECTED_EOF OpenSSL reports a
// bare TCP close exactly as it reports close_notify (SSL_ERROR_ZERO_RETURN, RECEIVED_SHUTDOWN),
// so the alert itself is the only evidence.
void on_message(int write_p, int, int content_type, const void* buf, std::size_t len, SSL* ssl,
                void*) {
  if (write_p != 0 || content_type != SSL3_RT_ALERT || len < 2) return;
  auto* c = static_cast<connection*>(SSL_get_app_data(ssl));
  const auto* b = static_cast<const unsigned char*>(buf);
  if (c != nullptr && b[1] == SSL_AD_CLOSE_NOTIFY) c->close_notify_received = true;
}

std::string first_openssl_reason() {
  unsigned long e = ERR_get_error();
  std::string out;
  if (e != 0) {
    const char* r = ERR_reason_error_string(e);
    out = r ? r : ("OpenSSL error " + std::to_string(e));
  }
  ERR_clear_error();
  return out;
}

// Ends the connection after a complete exchange: sends close_notify, does not wait for the
// peer's.
void finish(connection& c) {
  if (c.phase == connection_phase::done) return;
  if (c.limits->abortive_close) {
    // Marked shut down so that SSL_free keeps the session resumable (see finish_quiet);
    // SO_LINGER 0 makes the close in ~connection a reset.
    SSL_set_shutdown(c.ssl.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    linger l{1, 0};
    ::setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    c.phase = connection_phase::done;
    return;
  }
  ERR_clear_error();
  SSL_shutdown(c.ssl.get());
  ERR_clear_error();
  c.phase = connection_phase::done;
}

// The server ended the connection after the handshake: records how (`how`).
void finish_quiet(connection& c, peer_close how) {
  ERR_clear_error();
  c.closed_by = how;
  c.closed_at = clock_type::now();
  if (c.strict) {
    // A strict client answers a close_notify with its own and takes the session OpenSSL holds
    // after the end; after a bare close it does nothing more: whatever OpenSSL made of the
    // close (a fatal "unexpected eof" marks the session not resumable) stands.
    if (how == peer_close::close_notify) SSL_shutdown(c.ssl.get());
    ERR_clear_error();
    c.session_after_close.reset(SSL_get1_session(c.ssl.get()));
    c.phase = connection_phase::done;
    return;
  }
  // The peer ended the connection after the handshake: to OpenSSL an unshut connection is a
  // "bad session" that SSL_free removes (marking it not resumable, ssl_clear_bad_session),
  // which would spoil the sessions this connection gave us. Whether the server resumes them
  // is the server's call, which is what we measure.
  SSL_set_shutdown(c.ssl.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  c.phase = connection_phase::done;
}

std::chrono::milliseconds idle_for(const connection& c) {
  if (!c.limits->http && c.tls13 && !c.sessions.empty())
    return std::chrono::milliseconds(ticket_quiet_ms);
  return std::chrono::milliseconds(c.idle_ms > 0 ? c.idle_ms : c.limits->idle_ms);
}

void on_handshake(connection& c) {
  auto now = clock_type::now();
  c.handshake_ok = true;
  c.handshake_at = now;
  c.last_data = now;
  SSL* s = c.ssl.get();
  c.reused = SSL_session_reused(s) == 1;
  c.negotiated_protocol = SSL_get_version(s);
  if (const SSL_CIPHER* ci = SSL_get_current_cipher(s)) c.cipher = SSL_CIPHER_get_name(ci);
  int nid = SSL_get_negotiated_group(s);
  if (nid != 0) {
    const char* name = SSL_group_to_name(s, nid);
    if (name == nullptr) name = OBJ_nid2sn(nid);
    if (name != nullptr) c.group = name;
  }
  const unsigned char* alpn = nullptr;
  unsigned alpn_len = 0;
  SSL_get0_alpn_selected(s, &alpn, &alpn_len);
  if (alpn != nullptr) c.alpn.assign(reinterpret_cast<const char*>(alpn), alpn_len);
  // The staple is judged by the OCSP module against this handshake's chain, while the SSL
  // object still holds it.
  unsigned char* staple = nullptr;
  c.stapled = SSL_get_tlsext_status_ocsp_resp(s, &staple) > 0 && staple != nullptr;
  if (!c.early_data.empty()) {
    c.early = SSL_get_early_data_status(s) == SSL_EARLY_DATA_ACCEPTED
                  ? early_data_outcome::accepted
                  : early_data_outcome::rejected;
    if (c.early == early_data_outcome::accepted) {
      c.phase = connection_phase::reading;  // the request went in the first flight
    } else {
      c.request_sent_at.reset();
      c.phase = connection_phase::writing;  // rejected: OpenSSL does not resend it
    }
  } else if (c.limits->http) {
    c.phase = connection_phase::writing;
  } else if (c.tls13 && !c.limits->stop_after_handshake) {
    c.phase = connection_phase::reading;  // TLS 1.3 tickets come after the handshake: read them
  } else {
    finish(c);
  }
}

// Turns a failed SSL call into waiting or an error text.
void ssl_trouble(connection& c, int rc, int saved_errno) {
  int e = SSL_get_error(c.ssl.get(), rc);
  switch (e) {
    case SSL_ERROR_WANT_READ:
      c.want_write = false;
      ERR_clear_error();
      return;
    case SSL_ERROR_WANT_WRITE:
      c.want_write = true;
      ERR_clear_error();
      return;
    default:
      break;
  }
  bool in_handshake = c.phase == connection_phase::handshaking;
  std::string reason = first_openssl_reason();
  if (!in_handshake) {
    // After the handshake the measurement stands; a close or reset ends the reading.
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && saved_errno != ECONNRESET)) {
      finish_quiet(c, c.close_notify_received ? peer_close::close_notify : peer_close::eof);
      return;
    }
    if (e == SSL_ERROR_SYSCALL) {
      finish_quiet(c, peer_close::reset);
      return;
    }
    if (c.strict && reason.find("unexpected eof") != std::string::npos) {
      finish_quiet(c, peer_close::eof);  // the strict client's view of a close without close_notify
      return;
    }
    fail(c, "TLS error after the handshake: " + (reason.empty() ? std::string("unknown") : reason));
    return;
  }
  std::string msg;
  if (e == SSL_ERROR_ZERO_RETURN) {
    msg = "the server closed the TLS connection during the handshake";
  } else if (e == SSL_ERROR_SYSCALL && reason.empty()) {
    if (saved_errno == ECONNRESET)
      msg = "connection reset by the server during the TLS handshake";
    else if (saved_errno == 0 || saved_errno == EPIPE)
      msg = "the server closed the connection during the TLS handshake (EOF)";
    else
      msg = std::string("TLS handshake failed: ") + std::strerror(saved_errno);
  } else {
    msg = "TLS handshake failed: " + (reason.empty() ? std::string("unknown error") : reason);
    if (reason.find("wrong version number") != std::string::npos ||
        reason.find("packet length too long") != std::string::npos ||
        reason.find("record layer failure") != std::string::npos ||
        reason.find("unexpected message") != std::string::npos)
      msg += " (the server did not answer with TLS)";
  }
  fail(c, msg);
}

// "HTTP/1.1 421 ..." -> 421, from the first 12 bytes of the response however they arrive.
void read_status(connection& c, const char* data, std::size_t n) {
  constexpr std::size_t status_end = 12;  // "HTTP/1.x NNN"
  if (c.http_status || c.status_line.size() >= status_end) return;
  c.status_line.append(data, std::min(n, status_end - c.status_line.size()));
  if (c.status_line.size() < status_end || c.status_line.compare(0, 7, "HTTP/1.") != 0 ||
      c.status_line[8] != ' ')
    return;
  int code = 0;
  for (std::size_t i = 9; i < status_end; ++i) {
    if (c.status_line[i] < '0' || c.status_line[i] > '9') return;
    code = code * 10 + (c.status_line[i] - '0');
  }
  c.http_status = code;
}

// Keeps the response's header section, bounded, for the headers module.
void read_head(connection& c, const char* data, std::size_t n) {
  if (c.head_complete || c.response_head.size() >= max_response_head_bytes) return;
  const std::size_t before = c.response_head.size();
  c.response_head.append(data, std::min(n, max_response_head_bytes - before));
  // The blank line may straddle two reads: search from just before the new bytes.
  const auto end = c.response_head.find("\r\n\r\n", before < 3 ? 0 : before - 3);
  if (end == std::string::npos) return;
  c.response_head.resize(end + 4);
  c.head_complete = true;
}

std::string timeout_message(const connection& c) {
  std::string ms = std::to_string(c.limits->timeout_ms) + " ms";
  switch (c.phase) {
    case connection_phase::connecting:
      return "TCP connect to " + c.address + " timed out after " + ms;
    case connection_phase::handshaking:
      return "TLS handshake timed out after " + ms +
             " (the server accepted the connection but did not complete a handshake)";
    default:
      return "the server did not finish its response within " + ms;
  }
}

}  // namespace

connection::~connection() {
  ssl.reset();
  if (fd >= 0) ::close(fd);
}

std::string to_string(peer_close k) {
  switch (k) {
    case peer_close::close_notify:
      return "close_notify";
    case peer_close::eof:
      return "eof";
    case peer_close::reset:
      return "reset";
    default:
      return "not_seen";
  }
}

std::string to_string(early_data_outcome k) {
  switch (k) {
    case early_data_outcome::accepted:
      return "accepted";
    case early_data_outcome::rejected:
      return "rejected";
    default:
      return "not_sent";
  }
}

tls::ssl_ctx_ptr make_client_context(int version, bool no_ticket, bool alpn_http,
                                     long max_cert_list_bytes, bool strict_eof) {
  tls::ssl_ctx_ptr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) tls::throw_openssl("SSL_CTX_new");
  // Bounds the peer's Certificate message (chain size); a longer one fails the handshake
  // with "excessive message size".
  SSL_CTX_set_max_cert_list(ctx.get(), max_cert_list_bytes);
  SSL_CTX_set_min_proto_version(ctx.get(), version);
  SSL_CTX_set_max_proto_version(ctx.get(), version);
  if (no_ticket) SSL_CTX_set_options(ctx.get(), SSL_OP_NO_TICKET);
  // A peer that closes without close_notify after the handshake (nginx stream servers, many
  // proxies) ends the reading cleanly, as browsers take it: otherwise OpenSSL 3 makes the EOF
  // a fatal error, which marks the connection's sessions not resumable.
  if (!strict_eof) SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_msg_callback(ctx.get(), on_message);
  // The client "cache" only hands every new session to our callback; nothing is stored.
  SSL_CTX_set_session_cache_mode(ctx.get(),
                                 SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx.get(), on_new_session);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  if (alpn_http) {
    static const unsigned char alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_CTX_set_alpn_protos(ctx.get(), alpn, sizeof alpn);
  }
  return ctx;
}

void fail(connection& c, std::string why) {
  if (c.phase == connection_phase::done) return;
  c.error = std::move(why);
  c.phase = connection_phase::done;
}

void open_connection(connection& c, const sockaddr_storage& addr, socklen_t addr_len, SSL_CTX* ctx,
                     const std::string& sni, bool ask_staple, SSL_SESSION* offer, time_point now) {
  c.started = now;
  c.deadline = now + std::chrono::milliseconds(c.limits->timeout_ms);
  c.last_data = now;
  c.fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.fd < 0) {
    fail(c, std::string("socket: ") + std::strerror(errno));
    return;
  }
  int one = 1;
  ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int rc = ::connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), addr_len);
  if (rc != 0 && errno != EINPROGRESS) {
    fail(c, "TCP connect to " + c.address + " failed: " + std::strerror(errno));
    return;
  }
  c.ssl.reset(SSL_new(ctx));
  if (!c.ssl) {
    fail(c, "SSL_new failed: " + first_openssl_reason());
    return;
  }
  SSL_set_app_data(c.ssl.get(), &c);
  SSL_set_fd(c.ssl.get(), c.fd);
  SSL_set_connect_state(c.ssl.get());
  if (!sni.empty()) SSL_set_tlsext_host_name(c.ssl.get(), sni.c_str());
  if (ask_staple) SSL_set_tlsext_status_type(c.ssl.get(), TLSEXT_STATUSTYPE_ocsp);
  if (offer != nullptr) {
    // Offer a copy: when a resumed TLS 1.3 connection gets a new ticket, OpenSSL marks the
    // session it offered not resumable (SSL_CTX_remove_session), which would spoil the
    // shared first session for every later attempt.
    session_ptr copy(SSL_SESSION_dup(offer));
    SSL_set_session(c.ssl.get(), copy ? copy.get() : offer);
  }
  c.phase = connection_phase::connecting;
  if (rc == 0) step(c);
}

void step(connection& c) {
  if (c.phase == connection_phase::connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err == EINPROGRESS || err == EALREADY) return;
    if (err != 0) {
      fail(c, "TCP connect to " + c.address + " failed: " + std::strerror(err));
      return;
    }
    c.connected_at = clock_type::now();
    c.phase = connection_phase::handshaking;
  }
  char buf[16384];
  for (int guard = 0; guard < 1024 && c.phase != connection_phase::done; ++guard) {
    ERR_clear_error();
    errno = 0;
    if (c.phase == connection_phase::handshaking && c.early_off < c.early_data.size()) {
      std::size_t written = 0;
      int rc = SSL_write_early_data(c.ssl.get(), c.early_data.data() + c.early_off,
                                    c.early_data.size() - c.early_off, &written);
      int saved = errno;
      if (rc == 1) {
        c.early_off += written;
        if (c.early_off >= c.early_data.size()) {
          c.request_sent_at = clock_type::now();
          c.early_hold_until = *c.request_sent_at + std::chrono::milliseconds(early_data_hold_ms);
          return;  // check_time() goes on once the hold is over
        }
        continue;
      }
      ssl_trouble(c, rc, saved);
      return;
    }
    if (c.phase == connection_phase::handshaking && c.early_hold_until &&
        clock_type::now() < *c.early_hold_until)
      return;
    if (c.phase == connection_phase::handshaking) {
      int rc = SSL_do_handshake(c.ssl.get());
      int saved = errno;
      if (rc == 1) {
        on_handshake(c);
        continue;
      }
      ssl_trouble(c, rc, saved);
      return;
    }
    if (c.phase == connection_phase::writing) {
      int rc = SSL_write(c.ssl.get(), c.request.data() + c.request_off,
                         static_cast<int>(c.request.size() - c.request_off));
      int saved = errno;
      if (rc > 0) {
        c.request_off += static_cast<std::size_t>(rc);
        if (c.request_off >= c.request.size()) {
          c.phase = connection_phase::reading;
          c.last_data = clock_type::now();
          c.request_sent_at = c.last_data;
        }
        continue;
      }
      ssl_trouble(c, rc, saved);
      return;
    }
    if (c.phase == connection_phase::reading) {
      std::size_t sessions_before = c.sessions.size();
      int rc = SSL_read(c.ssl.get(), buf, sizeof buf);
      int saved = errno;
      if (rc > 0) {
        c.bytes_read += static_cast<std::size_t>(rc);
        c.last_data = clock_type::now();
        if (!c.first_byte_at) c.first_byte_at = c.last_data;
        if (c.bytes_read > c.limits->max_response_bytes) {
          fail(c, "the server sent more than " + std::to_string(c.limits->max_response_bytes) +
                      " bytes after the handshake without ending its response (endless data)");
          return;
        }
        if (c.limits->http) {
          read_status(c, buf, static_cast<std::size_t>(rc));
          read_head(c, buf, static_cast<std::size_t>(rc));
          c.tail.append(buf, static_cast<std::size_t>(rc));
          if (c.tail.find("\r\n\r\n") != std::string::npos) {
            if (!c.limits->read_to_close) {
              finish(c);
              return;
            }
            c.response_complete = true;  // read on until the server closes, to see how
          }
          if (c.tail.size() > 8) c.tail.erase(0, c.tail.size() - 8);
        }
        continue;
      }
      if (c.too_many_sessions) {
        fail(c, "the server sent more than " + std::to_string(c.limits->max_tickets) +
                    " session tickets on one connection (endless tickets)");
        return;
      }
      // A ticket processed inside SSL_read restarts the quiet timer too.
      if (c.sessions.size() != sessions_before) c.last_data = clock_type::now();
      ssl_trouble(c, rc, saved);
      return;
    }
  }
}

short poll_events(const connection& c) {
  if (c.phase == connection_phase::done || c.fd < 0) return 0;
  // Holding back the Finished: the server's answer waits in the socket, unread.
  if (c.phase == connection_phase::handshaking && c.early_hold_until) return 0;
  if (c.phase == connection_phase::connecting) return POLLOUT;
  return c.want_write ? POLLOUT : POLLIN;
}

time_point wake_time(const connection& c) {
  time_point wake = c.deadline;
  if (c.phase == connection_phase::handshaking && c.early_hold_until)
    wake = std::min(wake, *c.early_hold_until);
  if (c.phase == connection_phase::reading) wake = std::min(wake, c.last_data + idle_for(c));
  return wake;
}

void check_time(connection& c, time_point now) {
  if (c.phase == connection_phase::done) return;
  if (c.phase == connection_phase::handshaking && c.early_hold_until &&
      now >= *c.early_hold_until) {
    c.early_hold_until.reset();
    step(c);  // send the Finished, then read the answer
    if (c.phase == connection_phase::done) return;
  }
  if (c.phase == connection_phase::reading && now >= c.last_data + idle_for(c)) {
    finish(c);  // quiet long enough: the server has nothing more to say
  } else if (now >= c.deadline) {
    fail(c, timeout_message(c));
  }
}

}  // namespace ngxtls::probe
