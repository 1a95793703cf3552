#include "sandbox/upstream_standin.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>

#include "base/error.hpp"
#include "config/values.hpp"
#include "sandbox/sandbox_plan.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::sandbox {

standin_counts count(const std::vector<standin_connection>& connections) {
  standin_counts c;
  for (const auto& k : connections) {
    ++c.connections;
    c.requests += k.requests;
    if (!k.handshake_done) {
      ++c.failed_handshakes;
      continue;
    }
    ++c.handshakes;
    ++(k.resumed ? c.resumed : c.full_handshakes);
    c.sni.insert(k.sni);
    c.protocols.insert(k.protocol);
    if (k.client_certificate) ++c.client_certificates;
  }
  return c;
}

namespace {

using clock = std::chrono::steady_clock;

constexpr std::size_t k_max_body_bytes = 1 << 20;
constexpr const char* k_response_keep =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
    "Connection: keep-alive\r\n\r\nok\n";
constexpr const char* k_response_close =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
    "Connection: close\r\n\r\nok\n";
constexpr const char* k_not_implemented =
    "HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

// Accept every client certificate: the stand-in only records that one came.
int accept_any(int, X509_STORE_CTX*) {
  return 1;
}

// The server name of the ClientHello, into the connection's string (SSL app data): read here
// because after a resumed TLS 1.2 handshake SSL_get_servername answers from the session.
int record_server_name(SSL* ssl, int*, void*) {
  if (auto* sni = static_cast<std::string*>(SSL_get_app_data(ssl))) {
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    *sni = name ? name : "";
  }
  return SSL_TLSEXT_ERR_OK;
}

// Lowercase ASCII.
std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// What a request head asks of the connection.
struct request_head {
  bool keep_alive = true;
  std::size_t body_bytes = 0;
  bool unsupported = false;  ///< chunked body or a body beyond k_max_body_bytes
};

request_head read_head(const std::string& head) {
  request_head r;
  const auto line_end = head.find("\r\n");
  const std::string request_line = head.substr(0, line_end);
  const bool http10 =
      request_line.size() >= 8 && request_line.compare(request_line.size() - 8, 8, "HTTP/1.0") == 0;
  r.keep_alive = !http10;
  std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    auto end = head.find("\r\n", pos);
    if (end == std::string::npos) end = head.size();
    const std::string field = head.substr(pos, end - pos);
    pos = end + 2;
    const auto colon = field.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = lower(field.substr(0, colon));
    std::string value = lower(field.substr(colon + 1));
    value.erase(0, value.find_first_not_of(" \t"));
    if (name == "connection") {
      if (value.find("close") != std::string::npos) r.keep_alive = false;
      if (value.find("keep-alive") != std::string::npos) r.keep_alive = true;
    } else if (name == "content-length") {
      r.body_bytes = static_cast<std::size_t>(std::strtoull(value.c_str(), nullptr, 10));
      if (r.body_bytes > k_max_body_bytes) r.unsupported = true;
    } else if (name == "transfer-encoding" && value != "identity") {
      r.unsupported = true;
    }
  }
  return r;
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

struct upstream_standin::state {
  mutable std::mutex mutex;
  std::vector<standin_connection> records;
  tls::ssl_ctx_ptr ctx;
  standin_options options;
  bool stopping = false;

  // One accepted connection.
  struct conn {
    int fd = -1;
    tls::ssl_ptr ssl;
    std::size_t record = 0;
    bool handshake_done = false;
    std::string in, out;
    std::string sni;  ///< the ClientHello's server name (record_server_name)
    std::size_t body_left = 0;
    bool close_after_write = false;
    clock::time_point last_activity = clock::now();
  };
  std::list<conn> conns;

  void record(const conn& c, const std::function<void(standin_connection&)>& f) {
    std::lock_guard<std::mutex> lock(mutex);
    if (c.record < records.size()) f(records[c.record]);
  }
};

upstream_standin::upstream_standin(const standin_options& options, std::set<int>& taken)
    : name_(options.certificate_name), state_(std::make_unique<state>()) {
  state_->options = options;
  // nginx closing a kept connection while the stand-in writes must not kill the process.
  ::signal(SIGPIPE, SIG_IGN);
  tls::pki_options po;
  po.dns_names = {options.certificate_name};
  po.intermediate = false;
  pki_ = tls::make_pki(options.pki_dir, po);
  state_->ctx.reset(SSL_CTX_new(TLS_server_method()));
  if (!state_->ctx) tls::throw_openssl("stand-in upstream: SSL_CTX_new");
  SSL_CTX* ctx = state_->ctx.get();
  if (SSL_CTX_use_certificate_chain_file(ctx, pki_.chain.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, pki_.leaf_key.c_str(), SSL_FILETYPE_PEM) != 1)
    tls::throw_openssl("stand-in upstream: certificate " + pki_.chain);
  SSL_CTX_set_min_proto_version(ctx, TLS1_VERSION);
  SSL_CTX_set_security_level(ctx, 0);
  // Sessions resume as a real backend's would: a session cache for session IDs and tickets
  // under the context's own key.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
  const unsigned char sid_ctx[] = "ngxtls-standin";
  SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof sid_ctx - 1);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any);
  SSL_CTX_set_tlsext_servername_callback(ctx, record_server_name);

  if (::pipe2(wake_fd_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw target_error("stand-in upstream: pipe: " + std::string(std::strerror(errno)));
  for (int attempt = 0; attempt < 16 && listen_fd_ < 0; ++attempt) {
    const int port = free_loopback_port(taken);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) break;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 256) == 0) {
      listen_fd_ = fd;
      port_ = port;
    } else {
      ::close(fd);
    }
  }
  if (listen_fd_ < 0) {
    ::close(wake_fd_[0]);
    ::close(wake_fd_[1]);
    throw target_error("stand-in upstream: cannot listen on 127.0.0.1");
  }
  thread_ = std::thread([this] { serve(); });
}

upstream_standin::~upstream_standin() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  const char b = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_[1], &b, 1);
  if (thread_.joinable()) thread_.join();
  for (auto& c : state_->conns) ::close(c.fd);
  ::close(listen_fd_);
  ::close(wake_fd_[0]);
  ::close(wake_fd_[1]);
}

std::vector<standin_connection> upstream_standin::connections() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->records;
}

namespace {

// What to do with a connection after it was served: keep it, or close it.
enum class next_step { keep, close };

// Completes the handshake, answers the complete requests in `c.in` and writes what is pending.
template <class Conn, class State>
next_step serve_connection(State& st, Conn& c) {
  SSL* ssl = c.ssl.get();
  if (!c.handshake_done) {
    const int r = SSL_accept(ssl);
    if (r != 1) {
      const int e = SSL_get_error(ssl, r);
      ERR_clear_error();
      return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? next_step::keep
                                                                   : next_step::close;
    }
    c.handshake_done = true;
    tls::x509_ptr peer(SSL_get_peer_certificate(ssl));
    st.record(c, [&](standin_connection& k) {
      k.handshake_done = true;
      k.resumed = SSL_session_reused(ssl) == 1;
      k.protocol = SSL_get_version(ssl);
      k.sni = c.sni;
      k.client_certificate = peer != nullptr;
    });
  }
  char buf[16384];
  for (;;) {
    if (!c.out.empty()) {
      const int w = SSL_write(ssl, c.out.data(), static_cast<int>(c.out.size()));
      if (w <= 0) {
        const int e = SSL_get_error(ssl, w);
        ERR_clear_error();
        return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? next_step::keep
                                                                     : next_step::close;
      }
      c.out.erase(0, static_cast<std::size_t>(w));
      continue;
    }
    if (c.close_after_write) {
      SSL_shutdown(ssl);
      return next_step::close;
    }
    // Answer a complete request waiting in the buffer before reading more.
    if (c.body_left > 0 && !c.in.empty()) {
      const std::size_t n = std::min(c.body_left, c.in.size());
      c.in.erase(0, n);
      c.body_left -= n;
    }
    const auto head_end = c.in.find("\r\n\r\n");
    if (c.body_left == 0 && head_end != std::string::npos) {
      const request_head h = read_head(c.in.substr(0, head_end));
      c.in.erase(0, head_end + 4);
      if (h.unsupported) {
        c.out = k_not_implemented;
        c.close_after_write = true;
        continue;
      }
      c.body_left = h.body_bytes;
      c.out = h.keep_alive ? k_response_keep : k_response_close;
      c.close_after_write = !h.keep_alive;
      st.record(c, [](standin_connection& k) { ++k.requests; });
      continue;
    }
    if (c.in.size() > st.options.max_request_head_bytes) return next_step::close;
    const int r = SSL_read(ssl, buf, sizeof buf);
    if (r <= 0) {
      const int e = SSL_get_error(ssl, r);
      ERR_clear_error();
      return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? next_step::keep
                                                                   : next_step::close;
    }
    c.in.append(buf, static_cast<std::size_t>(r));
  }
}

}  // namespace

void upstream_standin::serve() {
  auto& st = *state_;
  std::vector<pollfd> fds;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(st.mutex);
      if (st.stopping) return;
    }
    fds.clear();
    fds.push_back({wake_fd_[0], POLLIN, 0});
    const bool room = static_cast<int>(st.conns.size()) < st.options.max_connections;
    fds.push_back({listen_fd_, static_cast<short>(room ? POLLIN : 0), 0});
    for (const auto& c : st.conns) {
      short ev = POLLIN;
      if (!c.out.empty() || (!c.handshake_done && SSL_want_write(c.ssl.get()))) ev |= POLLOUT;
      fds.push_back({c.fd, ev, 0});
    }
    if (::poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) return;
    if (fds[1].revents & POLLIN) {
      for (int fd; (fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
        set_nonblocking(fd);
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        state::conn c;
        c.fd = fd;
        c.ssl.reset(SSL_new(st.ctx.get()));
        if (!c.ssl) {
          ::close(fd);
          continue;
        }
        SSL_set_fd(c.ssl.get(), fd);
        {
          std::lock_guard<std::mutex> lock(st.mutex);
          if (static_cast<int>(st.records.size()) >= st.options.max_recorded_connections) {
            ::close(fd);
            continue;
          }
          c.record = st.records.size();
          st.records.emplace_back();
        }
        st.conns.push_back(std::move(c));
        // The list keeps the element where it is: the callback may hold its string.
        SSL_set_app_data(st.conns.back().ssl.get(), &st.conns.back().sni);
      }
    }
    const auto now = clock::now();
    std::size_t i = 2;
    for (auto it = st.conns.begin(); it != st.conns.end(); ++i) {
      const short rev = i < fds.size() ? fds[i].revents : 0;
      next_step step = next_step::keep;
      if (rev != 0) {
        it->last_activity = now;
        step = serve_connection(st, *it);
      } else if (now - it->last_activity > std::chrono::milliseconds(st.options.idle_timeout_ms)) {
        step = next_step::close;
      }
      if (step == next_step::close) {
        ::close(it->fd);
        it = st.conns.erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace ngxtls::sandbox
