#include "serve/front.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "serve/request_head.hpp"

namespace ngxtls::serve {

namespace {

using clock_type = std::chrono::steady_clock;

// How often deadlines are checked, and the longest epoll wait.
constexpr int tick_ms = 50;

// Connections accepted per wake-up, so that a flood of connects does not starve the others.
constexpr int accepts_per_wakeup = 256;

const char* reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Service Unavailable";
  }
}

// One well-formed answer that ends the connection.
std::string refusal(int status, const std::string& reason, bool head_method) {
  const std::string body = reason + "\n";
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                    "\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n"
                    "Content-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n";
  if (!head_method) out += body;
  return out;
}

enum class phase {
  handshake,  // TLS handshake under way
  head,       // waiting for a request head (the first, or the next on a kept-alive connection)
  request,    // a request handed to the daemon: its answer is being relayed
  closing,    // the last answer is being sent; nothing more is read
  draining,   // answer sent and write side shut: further bytes are read and dropped
};

struct connection {
  int fd = -1;
  SSL* ssl = nullptr;
  int backend = -1;  // our end of the socket pair to the daemon; -1 until the first request
  sockaddr_storage peer{};
  socklen_t peer_len = 0;
  phase at = phase::head;
  std::string in;  // client bytes not yet handed on (at most max_request_head_bytes)
  std::size_t scanned = 0;
  std::string to_backend;
  std::string out;  // bytes for the client
  std::size_t out_sent = 0;
  answer_tracker answer;
  clock_type::time_point waiting_since, last_read, last_write, drain_until;
  bool client_eof = false;
  bool close_after_out = false;
  bool ssl_wants_write = false;  // the last TLS read or handshake step needs the socket writable
  bool ssl_wants_read = false;   // the last TLS write needs the socket readable
  bool dead = false;
  std::uint32_t client_events = 0, backend_events = 0;

  bool out_pending() const { return out_sent < out.size(); }
  bool waiting_for_head() const {
    return (at == phase::handshake || at == phase::head) && !out_pending();
  }
};

}  // namespace

struct front::impl {
  front& owner;
  int listen_fd;
  SSL_CTX* tls;
  add_connection add;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::thread thread;
  std::atomic<bool> quit{false};
  std::atomic<bool> accepting{true};
  std::atomic<int> answering{0};
  bool listening = false;
  std::unordered_map<int, connection*> by_fd;
  std::vector<connection*> conns;
  std::vector<int> again;  // connections whose pump stopped while it could still go on (by fd)
  clock_type::time_point next_tick;

  impl(front& o, int l, SSL_CTX* t, add_connection a)
      : owner(o), listen_fd(l), tls(t), add(std::move(a)) {}

  void watch(int fd, std::uint32_t& current, std::uint32_t wanted) {
    if (wanted == current) return;
    epoll_event ev{};
    ev.events = wanted;
    ev.data.fd = fd;
    // A socket that wants nothing is left out of the set: a hung-up socket would otherwise be
    // reported over and over.
    if (wanted == 0)
      ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    else
      ::epoll_ctl(epoll_fd, current == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
    current = wanted;
  }

  void set_listening(bool on) {
    if (on == listening) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd;
    ::epoll_ctl(epoll_fd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, listen_fd, &ev);
    listening = on;
  }

  void close_backend(connection& c) {
    if (c.backend < 0) return;
    by_fd.erase(c.backend);
    ::close(c.backend);  // also leaves the epoll set
    c.backend = -1;
    c.backend_events = 0;
  }

  void destroy(connection* c) {
    close_backend(*c);
    by_fd.erase(c->fd);
    if (c->ssl) SSL_free(c->ssl);
    ::close(c->fd);
    conns.erase(std::find(conns.begin(), conns.end(), c));
    delete c;
    if (accepting && !quit) set_listening(true);
  }

  // Takes the slot of a connection that is only being drained after its last answer, else of
  // the one that has waited longest for a request head.
  bool evict_one() {
    connection* oldest = nullptr;
    for (auto* c : conns)
      if (c->at == phase::draining) {
        oldest = c;
        break;
      } else if (c->waiting_for_head() && (!oldest || c->waiting_since < oldest->waiting_since)) {
        oldest = c;
      }
    if (!oldest) return false;
    destroy(oldest);
    return true;
  }

  void accept_some() {
    for (int i = 0; i < accepts_per_wakeup && accepting; ++i) {
      if (conns.size() >= max_http_connections && !evict_one()) {
        set_listening(false);  // resumed when a slot frees
        return;
      }
      sockaddr_storage peer{};
      socklen_t len = sizeof peer;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE) set_listening(false);  // retried on the tick
        return;
      }
      auto* c = new connection;
      c->fd = fd;
      c->peer = peer;
      c->peer_len = len;
      c->waiting_since = c->last_read = c->last_write = clock_type::now();
      if (tls) {
        c->ssl = SSL_new(tls);
        if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
          if (c->ssl) SSL_free(c->ssl);
          ERR_clear_error();
          ::close(fd);
          delete c;
          continue;
        }
        SSL_set_accept_state(c->ssl);
        c->at = phase::handshake;
      }
      conns.push_back(c);
      by_fd[fd] = c;
      pump(*c);
      if (c->dead) destroy(c);
    }
  }

  void queue_out(connection& c, std::string_view bytes) {
    if (!c.out_pending()) {
      c.out.clear();
      c.out_sent = 0;
      c.last_write = clock_type::now();
    }
    c.out.append(bytes);
  }

  void refuse(connection& c, int status, const std::string& reason) {
    const bool head_method = c.in.rfind("HEAD ", 0) == 0;
    queue_out(c, refusal(status, reason, head_method));
    c.in.clear();
    c.close_after_out = true;
    c.at = phase::closing;
  }

  bool handshake(connection& c) {
    c.ssl_wants_write = false;
    const int r = SSL_do_handshake(c.ssl);
    if (r == 1) {
      c.at = phase::head;
      return true;
    }
    const int e = SSL_get_error(c.ssl, r);
    if (e == SSL_ERROR_WANT_WRITE) {
      c.ssl_wants_write = true;
    } else if (e != SSL_ERROR_WANT_READ) {
      c.dead = true;  // not TLS, or a failed handshake: nothing can be answered
    }
    ERR_clear_error();
    return false;
  }

  bool read_client(connection& c) {
    if (c.client_eof || c.at == phase::closing || c.at == phase::handshake) return false;
    bool got = false;
    c.ssl_wants_write = false;
    char buf[16384];
    while (c.in.size() < max_request_head_bytes) {
      const std::size_t want = std::min(sizeof buf, max_request_head_bytes - c.in.size());
      ssize_t n;
      if (c.ssl) {
        n = SSL_read(c.ssl, buf, static_cast<int>(want));
        if (n <= 0) {
          const int e = SSL_get_error(c.ssl, static_cast<int>(n));
          ERR_clear_error();
          if (e == SSL_ERROR_WANT_READ) break;
          if (e == SSL_ERROR_WANT_WRITE) {
            c.ssl_wants_write = true;
            break;
          }
          c.client_eof = true;  // close_notify, or the connection went away
          break;
        }
      } else {
        n = ::recv(c.fd, buf, want, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n <= 0) {
          c.client_eof = true;
          break;
        }
      }
      c.in.append(buf, static_cast<std::size_t>(n));
      c.last_read = clock_type::now();
      got = true;
    }
    return got;
  }

  bool open_backend(connection& c) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0)
      return false;
    if (!add(pair[1], reinterpret_cast<const sockaddr*>(&c.peer), c.peer_len)) {
      ::close(pair[0]);
      return false;
    }
    c.backend = pair[0];
    by_fd[c.backend] = &c;
    return true;
  }

  bool next_request(connection& c) {
    if (c.at != phase::head) return false;
    std::size_t lead = 0;
    while (lead + 1 < c.in.size() && c.in[lead] == '\r' && c.in[lead + 1] == '\n') lead += 2;
    if (lead > 0) {
      // Empty lines before a request line are ignored (RFC 9112 section 2.2).
      c.in.erase(0, lead);
      c.scanned = 0;
    }
    const auto v = check_request_head(c.in, &c.scanned);
    switch (v.what) {
      case head_verdict::kind::incomplete:
        if (c.client_eof) {
          c.close_after_out = true;
          c.at = phase::closing;
        }
        return false;
      case head_verdict::kind::refuse:
        refuse(c, v.status, v.reason);
        return true;
      case head_verdict::kind::accept:
        break;
    }
    if (c.backend < 0 && !open_backend(c)) {
      refuse(c, 503, "the exporter cannot take more connections now");
      return true;
    }
    if (v.rewritten)
      c.to_backend.append(*v.rewritten);
    else
      c.to_backend.append(c.in, 0, v.length);
    c.in.erase(0, v.length);
    c.scanned = 0;
    c.answer.start(v.head_method);
    c.at = phase::request;
    return true;
  }

  bool write_backend(connection& c) {
    bool moved = false;
    while (c.backend >= 0 && !c.to_backend.empty()) {
      const ssize_t n = ::send(c.backend, c.to_backend.data(), c.to_backend.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        c.to_backend.clear();
        backend_closed(c);
        break;
      }
      c.to_backend.erase(0, static_cast<std::size_t>(n));
      moved = true;
    }
    return moved;
  }

  void backend_closed(connection& c) {
    close_backend(c);
    // The daemon ends a connection after an answer that says so (Connection: close, HTTP/1.0)
    // or when it cannot go on: the client's connection ends with it.
    c.close_after_out = true;
    c.at = phase::closing;
  }

  bool read_backend(connection& c) {
    bool got = false;
    char buf[16384];
    while (c.backend >= 0 && c.out.size() - c.out_sent < max_buffered_answer_bytes) {
      const ssize_t n = ::recv(c.backend, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        backend_closed(c);
        return true;
      }
      got = true;
      const std::string_view bytes(buf, static_cast<std::size_t>(n));
      if (c.at != phase::request) continue;  // nothing is owed: not passed on
      const std::size_t used = c.answer.feed(bytes);
      queue_out(c, bytes.substr(0, used));
      if (c.answer.done()) {
        c.at = phase::head;
        c.waiting_since = c.last_read = clock_type::now();
      }
    }
    return got;
  }

  bool write_client(connection& c) {
    bool moved = false;
    c.ssl_wants_read = false;
    while (c.out_pending()) {
      const std::size_t left = c.out.size() - c.out_sent;
      ssize_t n;
      if (c.ssl) {
        n = SSL_write(c.ssl, c.out.data() + c.out_sent,
                      static_cast<int>(std::min<std::size_t>(left, INT_MAX)));
        if (n <= 0) {
          const int e = SSL_get_error(c.ssl, static_cast<int>(n));
          ERR_clear_error();
          if (e == SSL_ERROR_WANT_WRITE) break;
          if (e == SSL_ERROR_WANT_READ) {
            c.ssl_wants_read = true;
            break;
          }
          c.dead = true;
          return moved;
        }
      } else {
        n = ::send(c.fd, c.out.data() + c.out_sent, left, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n <= 0) {
          c.dead = true;
          return moved;
        }
      }
      c.out_sent += static_cast<std::size_t>(n);
      c.last_write = clock_type::now();
      moved = true;
    }
    if (!c.out_pending()) {
      c.out.clear();
      c.out_sent = 0;
    }
    return moved;
  }

  void begin_drain(connection& c) {
    close_backend(c);
    if (c.ssl) {
      SSL_shutdown(c.ssl);  // close_notify, once; not waited for
      ERR_clear_error();
    }
    ::shutdown(c.fd, SHUT_WR);
    c.at = phase::draining;
    c.drain_until = clock_type::now() + std::chrono::milliseconds(close_drain_ms);
    if (c.client_eof) c.dead = true;
  }

  void drain(connection& c) {
    char buf[16384];
    for (;;) {
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      c.dead = true;  // end of stream, or the connection went away
      return;
    }
  }

  // Does everything the connection's sockets allow now, then asks for the events it waits for.
  // A connection that could go on after 16 rounds is taken up again after the others' events,
  // so that bytes already read (a pipelined request) never wait for an event that will not come.
  void pump(connection& c) {
    for (int round = 0; !c.dead; ++round) {
      if (round == 16) {
        again.push_back(c.fd);
        break;
      }
      if (c.at == phase::draining) {
        drain(c);
        break;
      }
      bool moved = false;
      if (c.at == phase::handshake) moved |= handshake(c);
      if (c.dead) break;
      moved |= read_client(c);
      moved |= next_request(c);
      moved |= write_backend(c);
      moved |= read_backend(c);
      moved |= write_client(c);
      if (c.dead) break;
      if (c.close_after_out && !c.out_pending() && c.at != phase::request) {
        begin_drain(c);
        moved = true;
      }
      if (!moved) break;
    }
    if (c.dead) return;
    std::uint32_t client = 0;
    if (c.at == phase::draining) {
      client = EPOLLIN;
    } else if (c.at == phase::handshake) {
      client = c.ssl_wants_write ? EPOLLOUT : EPOLLIN;
    } else {
      if ((!c.client_eof && c.at != phase::closing && c.in.size() < max_request_head_bytes) ||
          c.ssl_wants_read)
        client |= EPOLLIN;
      if (c.out_pending() || c.ssl_wants_write) client |= EPOLLOUT;
    }
    watch(c.fd, c.client_events, client);
    if (c.backend >= 0) {
      std::uint32_t backend = 0;
      if (c.out.size() - c.out_sent < max_buffered_answer_bytes) backend |= EPOLLIN;
      if (!c.to_backend.empty()) backend |= EPOLLOUT;
      watch(c.backend, c.backend_events, backend);
    }
  }

  void tick(clock_type::time_point now) {
    const auto header_timeout = std::chrono::milliseconds(owner.header_timeout_ms.load());
    const auto idle_timeout = std::chrono::milliseconds(owner.idle_timeout_ms.load());
    int busy = 0;
    bool evictable = false;
    std::vector<connection*> ended;
    for (auto* c : conns) {
      if (c->at == phase::request || c->out_pending()) ++busy;
      evictable = evictable || c->waiting_for_head() || c->at == phase::draining;
      if (c->at == phase::draining) {
        if (now > c->drain_until) ended.push_back(c);
      } else if (c->waiting_for_head()) {
        if (now - c->waiting_since > header_timeout) {
          if (c->at == phase::head && !c->in.empty()) {
            refuse(*c, 408,
                   "the request head did not arrive within " +
                       std::to_string(header_timeout.count()) + " ms");
            pump(*c);
            if (c->dead) ended.push_back(c);
          } else {
            ended.push_back(c);  // nothing was asked: closed without an answer
          }
        } else if (now - c->last_read > idle_timeout) {
          ended.push_back(c);
        }
      } else if (c->out_pending() && now - c->last_write > idle_timeout) {
        ended.push_back(c);  // a client that does not read its answer
      }
    }
    for (auto* c : ended) destroy(c);
    answering = busy;
    // Accepting resumes when a slot is free or some connection could give way: a kept-alive
    // connection waiting for its next request is one, without being closed.
    if (accepting && !quit && (conns.size() < max_http_connections || evictable))
      set_listening(true);
  }

  void loop() {
    std::vector<epoll_event> events(256);
    next_tick = clock_type::now();
    while (!quit) {
      const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()),
                                 again.empty() ? tick_ms : 0);
      std::vector<int> resume;
      resume.swap(again);
      for (const int fd : resume) {
        const auto it = by_fd.find(fd);
        if (it == by_fd.end() || it->second->fd != fd) continue;
        connection* c = it->second;
        pump(*c);
        if (c->dead) destroy(c);
      }
      for (int i = 0; i < n && !quit; ++i) {
        const int fd = events[static_cast<std::size_t>(i)].data.fd;
        const auto what = events[static_cast<std::size_t>(i)].events;
        if (fd == wake_fd) {
          std::uint64_t v;
          [[maybe_unused]] const auto r = ::read(wake_fd, &v, sizeof v);
          if (!accepting) set_listening(false);
          continue;
        }
        if (fd == listen_fd) {
          if (accepting) accept_some();
          continue;
        }
        const auto it = by_fd.find(fd);
        if (it == by_fd.end()) continue;  // closed earlier in this batch
        connection* c = it->second;
        if (fd == c->fd && (what & (EPOLLERR | EPOLLHUP)) && c->at != phase::request)
          c->dead = true;  // reset by the client
        else
          pump(*c);
        if (c->dead) destroy(c);
      }
      const auto now = clock_type::now();
      if (now >= next_tick) {
        tick(now);
        next_tick = now + std::chrono::milliseconds(tick_ms);
      }
    }
  }
};

front::front(int listen_fd, SSL_CTX* tls, add_connection add)
    : impl_(std::make_unique<impl>(*this, listen_fd, tls, std::move(add))) {}

front::~front() {
  stop();
}

void front::start() {
  impl_->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  impl_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = impl_->wake_fd;
  ::epoll_ctl(impl_->epoll_fd, EPOLL_CTL_ADD, impl_->wake_fd, &ev);
  impl_->set_listening(true);
  impl_->thread = std::thread([this] { impl_->loop(); });
}

void front::stop_accepting() {
  impl_->accepting = false;
  if (impl_->wake_fd >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto r = ::write(impl_->wake_fd, &one, sizeof one);
  }
}

bool front::answering() const {
  return impl_->answering > 0;
}

void front::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->accepting = false;
  impl_->quit = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto r = ::write(impl_->wake_fd, &one, sizeof one);
  impl_->thread.join();
  while (!impl_->conns.empty()) impl_->destroy(impl_->conns.back());
  ::close(impl_->epoll_fd);
  ::close(impl_->wake_fd);
  impl_->epoll_fd = impl_->wake_fd = -1;
}

}  // namespace ngxtls::serve
