#include "sandbox/upstream_drive.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tls/openssl_ptr.hpp"

namespace ngxtls::sandbox {

double drive_result::requests_per_second() const {
  const int answered = ok + bad_gateway + other_status;
  return elapsed_s > 0 ? answered / elapsed_s : 0;
}

namespace {

using clock = std::chrono::steady_clock;

constexpr std::size_t k_max_head_bytes = 65536;
constexpr std::size_t k_max_body_bytes = 1 << 20;

// One blocking TLS client connection to nginx.
class client {
 public:
  client(SSL_CTX* ctx, int port, const std::string& sni, int timeout_ms, std::string& error) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      error = std::strerror(errno);
      return;
    }
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      error = "connect to 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(errno);
      return;
    }
    ssl_.reset(SSL_new(ctx));
    SSL_set_fd(ssl_.get(), fd_);
    if (!sni.empty()) SSL_set_tlsext_host_name(ssl_.get(), sni.c_str());
    if (SSL_connect(ssl_.get()) != 1) {
      error = "TLS handshake with nginx failed: " + tls::drain_openssl_errors();
      ssl_.reset();
    }
  }
  ~client() {
    if (ssl_) SSL_shutdown(ssl_.get());
    if (fd_ >= 0) ::close(fd_);
  }
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  bool usable() const { return ssl_ != nullptr; }

  /// Sends `request` and reads one response: its status, 0 on failure (`error` says why).
  /// `keep` is false when the connection cannot carry another request.
  int exchange(const std::string& request, bool& keep, std::string& error) {
    keep = false;
    if (SSL_write(ssl_.get(), request.data(), static_cast<int>(request.size())) <= 0) {
      error = "writing the request failed";
      return 0;
    }
    std::size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (buf_.size() > k_max_head_bytes || !fill()) {
        error = "no complete response head";
        return 0;
      }
    }
    const std::string head = buf_.substr(0, head_end);
    buf_.erase(0, head_end + 4);
    int status = 0;
    if (head.size() > 12) status = std::atoi(head.c_str() + 9);
    std::string low = head;
    for (auto& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const auto cl = low.find("\r\ncontent-length:");
    if (cl != std::string::npos) {
      const std::size_t len = std::strtoull(low.c_str() + cl + 17, nullptr, 10);
      if (len > k_max_body_bytes) {
        error = "response body too long";
        return 0;
      }
      while (buf_.size() < len)
        if (!fill()) {
          error = "response body cut short";
          return 0;
        }
      buf_.erase(0, len);
    } else if (low.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
      std::size_t end;
      while ((end = buf_.find("0\r\n\r\n")) == std::string::npos)
        if (buf_.size() > k_max_body_bytes || !fill()) {
          error = "chunked response cut short";
          return 0;
        }
      buf_.erase(0, end + 5);
    } else {
      return status;  // read to close: nothing follows on this connection
    }
    keep = low.find("\r\nconnection: close") == std::string::npos;
    return status;
  }

 private:
  bool fill() {
    char b[16384];
    const int r = SSL_read(ssl_.get(), b, sizeof b);
    if (r <= 0) return false;
    buf_.append(b, static_cast<std::size_t>(r));
    return true;
  }

  int fd_ = -1;
  tls::ssl_ptr ssl_;
  std::string buf_;
};

}  // namespace

drive_result drive_requests(int port, const std::string& sni, const std::string& host,
                            const std::string& path, const drive_options& o) {
  if (o.connections < 1 || o.connections > 256 || o.requests < 0 ||
      (o.requests == 0 && o.duration_ms <= 0))
    throw std::invalid_argument("drive_requests: connections 1..256 and requests or a duration");
  // nginx closing a connection while a request is written must not kill the process.
  ::signal(SIGPIPE, SIG_IGN);
  tls::ssl_ctx_ptr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) tls::throw_openssl("drive_requests: SSL_CTX_new");
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  const std::string request =
      "GET " + path + " HTTP/1.1\r\nHost: " + (host.empty() ? std::string("localhost") : host) +
      "\r\nUser-Agent: ngxtls-check\r\n\r\n";
  drive_result total;
  std::mutex mutex;
  const auto start = clock::now();
  const auto deadline = start + std::chrono::milliseconds(o.duration_ms);
  std::atomic<int> remaining{o.requests};
  // Requests on the connections of `slots` (one slot per connection kept), the slot `turn`
  // picks for each request; one thread runs it.
  auto run = [&](int slots, bool take_turns) {
    drive_result r;
    std::vector<std::unique_ptr<client>> c(static_cast<std::size_t>(slots));
    int connect_failures = 0;
    for (std::size_t turn = 0;; turn = take_turns ? (turn + 1) % c.size() : 0) {
      if (o.duration_ms > 0 && clock::now() >= deadline) break;
      if (o.requests > 0 && remaining.fetch_sub(1) <= 0) break;
      auto& slot = c[turn];
      if (!slot) {
        std::string err;
        slot = std::make_unique<client>(ctx.get(), port, sni, o.timeout_ms, err);
        ++r.client_connections;
        if (!slot->usable()) {
          ++r.failed;
          if (r.first_error.empty()) r.first_error = err;
          slot.reset();
          if (++connect_failures >= 3) break;
          continue;
        }
      }
      bool keep = false;
      std::string err;
      ++r.sent;
      const int status = slot->exchange(request, keep, err);
      if (status == 0) {
        ++r.failed;
        if (r.first_error.empty()) r.first_error = err;
      } else if (status >= 200 && status < 300) {
        ++r.ok;
      } else if (status == 502) {
        ++r.bad_gateway;
      } else {
        ++r.other_status;
      }
      if (!keep) slot.reset();
    }
    std::lock_guard<std::mutex> lock(mutex);
    total.sent += r.sent;
    total.ok += r.ok;
    total.bad_gateway += r.bad_gateway;
    total.other_status += r.other_status;
    total.failed += r.failed;
    total.client_connections += r.client_connections;
    if (total.first_error.empty()) total.first_error = r.first_error;
  };
  if (o.one_at_a_time) {
    run(o.connections, true);
  } else {
    std::vector<std::thread> threads;
    for (int i = 0; i < o.connections; ++i) threads.emplace_back(run, 1, false);
    for (auto& t : threads) t.join();
  }
  total.elapsed_s = std::chrono::duration<double>(clock::now() - start).count();
  return total;
}

}  // namespace ngxtls::sandbox
