// The QUIC probe against real QUIC servers: nginx built with --with-http_v3_module (one nginx
// per version, four servers in it) with the TCP prober measuring the same servers, the Debian
// ngtcp2 example server (another implementation, GnuTLS), and hostile UDP servers.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

#include "probe/quic_probe.hpp"
#include "probe_util.hpp"
#include "support/nginx_versions.hpp"
#include "support/server_process.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

sockaddr_storage loopback(int port, socklen_t& len) {
  sockaddr_storage ss{};
  auto* in = reinterpret_cast<sockaddr_in*>(&ss);
  in->sin_family = AF_INET;
  in->sin_port = htons(static_cast<std::uint16_t>(port));
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  len = sizeof(sockaddr_in);
  return ss;
}

probe::quic_result quic_probe_port(int port, int attempts, bool early_data, int timeout_ms = 3000) {
  socklen_t len = 0;
  auto addr = loopback(port, len);
  probe::quic_probe_options o;
  o.attempts = attempts;
  o.early_data = early_data;
  o.timeout_ms = timeout_ms;
  o.sni = "localhost";
  o.authority = "localhost:" + std::to_string(port);
  return probe::run_quic_probe(addr, len, o);
}

// A UDP port nothing is bound to now.
int free_udp_port() {
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  socklen_t len = 0;
  auto addr = loopback(0, len);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

// What QUIC measures on nginx `binary`, each against the TCP prober on the same server.
// `quic_early_data`: the build's QUIC can do 0-RTT (OpenSSL's own QUIC API, 1.30.x here); nginx's
// OpenSSL compatibility layer (1.26.3 on OpenSSL 3.0) issues QUIC tickets without early_data.
void nginx_quic_facts(const std::string& binary, const std::string& version, bool quic_early_data) {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string());
  int tickets = free_port(), no_resumption = free_port(), retry = free_port(),
      no_early = free_port();
  std::string body = quic_server(tickets, pki, "ssl_early_data on;") +
                     quic_server(no_resumption, pki, "ssl_session_tickets off;") +
                     quic_server(retry, pki, "quic_retry on;") +
                     quic_server(no_early, pki, "ssl_early_data off;");
  nginx_options no;
  no.binary = binary;
  no.wait_ports = {tickets, no_resumption, retry, no_early};
  nginx_instance nginx(nginx_conf(1, body), no);
  auto tcp_o = quick(5);
  tcp_o.tls12 = false;
  tcp_o.quic = probe::quic_mode::never;
  INFO("nginx ", version);

  // Tickets on: TCP TLS 1.3 resumes, and so does QUIC, under the same ticket key.
  auto tcp = run_of(probe_port(tickets, tcp_o), "TLSv1.3", "ticket");
  auto q = quic_probe_port(tickets, 10, true);
  const auto early = q;
  REQUIRE_MESSAGE(!q.error, q.error.value_or(""));
  CHECK(tcp.rate == 1.0);
  CHECK(q.attempts == 10);
  CHECK(q.rate == 1.0);
  CHECK(q.alpn == "h3");
  CHECK(q.http_statuses.at(200) >= 14);  // the first, 3 samples, 10 attempts
  REQUIRE(q.ticket_key_names.size() == 1);
  REQUIRE(tcp.ticket_key_names.size() == 1);
  CHECK(q.ticket_key_names.front() == tcp.ticket_key_names.begin()->first);
  CHECK(q.ticket_lifetime_hint_s == 300u);  // ssl_session_timeout's default
  CHECK(!q.retry);
  // Tickets off and no session cache: TCP TLS 1.3 does not resume, nor does QUIC.
  tcp = run_of(probe_port(no_resumption, tcp_o), "TLSv1.3", "ticket");
  q = quic_probe_port(no_resumption, 5, false);
  REQUIRE_MESSAGE(!q.error, q.error.value_or(""));
  CHECK(tcp.attempts == 5);
  CHECK(tcp.rate == 0.0);
  CHECK(q.attempts == 5);
  CHECK(q.resumed == 0);
  CHECK(q.ticket_key_names.empty());  // 32-byte session IDs, no key name
  CHECK(q.stateful_tickets > 0);

  // quic_retry on: a Retry for the connection without a token; the NEW_TOKEN it then gets lets
  // the next connection skip the Retry.
  q = quic_probe_port(retry, 3, false);
  REQUIRE_MESSAGE(!q.error, q.error.value_or(""));
  CHECK(q.retry);
  CHECK(q.new_token_received);
  CHECK(q.retry_with_token == false);
  CHECK(q.token_resumed == true);
  CHECK(q.rate == 1.0);

  // ssl_early_data off: the tickets allow no 0-RTT, so none is sent.
  q = quic_probe_port(no_early, 3, true);
  REQUIRE_MESSAGE(!q.error, q.error.value_or(""));
  CHECK(q.max_early_data == 0u);
  CHECK(!q.early_data_tried);
  CHECK(q.rate == 1.0);

  // ssl_early_data on, the probe above.
  q = early;
  if (!quic_early_data) {
    // The compatibility layer: no 0-RTT over QUIC although TCP TLS 1.3 accepts early data.
    CHECK(q.max_early_data == 0u);
    CHECK(!q.early_data_tried);
    return;
  }
  // ssl_early_data on: the ticket allows 0-RTT (QUIC's 0xffffffff, RFC 9001 4.6.1), the request
  // sent in it is answered, and so is the same request replayed with the same ticket.
  CHECK(q.max_early_data == 0xffffffffu);
  REQUIRE(q.early_data_tried);
  CHECK(q.early_first.outcome == probe::early_data_outcome::accepted);
  CHECK(q.early_first.http_status == 200);
  CHECK(q.early_replay.outcome == probe::early_data_outcome::accepted);
  CHECK(q.early_replay_answered);
}

void on_quic_version(const char* slot, bool quic_early_data) {
  auto v = nginx_version_for(slot);
  if (v.status != "ok" || !has_http_v3(v.binary)) {
    std::cout << "NGXTLS_SKIP: nginx " << v.version << " with http_v3 not installed here ("
              << v.note << ")" << std::endl;
    return;
  }
  std::cout << "measured on nginx " << v.version << " (" << v.binary << "; " << v.note << ")"
            << std::endl;
  nginx_quic_facts(v.binary, v.version, quic_early_data);
}

// A UDP server on a free loopback port answering every datagram as `mode` says.
struct hostile_udp {
  int fd = -1;
  int port = 0;
  std::atomic<bool> stop{false};
  std::thread th;
  explicit hostile_udp(std::string mode) {
    fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    socklen_t len = 0;
    auto addr = loopback(0, len);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    th = std::thread([this, mode] { serve(mode); });
  }
  void serve(const std::string& mode) {
    std::vector<unsigned char> buf(65536), garbage(1200), big(65507, 0xc3);
    for (std::size_t i = 0; i < garbage.size(); ++i)
      garbage[i] = static_cast<unsigned char>(i * 37 + 11);
    while (!stop) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      sockaddr_storage from{};
      socklen_t flen = sizeof from;
      if (::recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &flen) < 0)
        continue;
      auto* to = reinterpret_cast<sockaddr*>(&from);
      if (mode == "garbage")
        for (int i = 0; i < 3; ++i) ::sendto(fd, garbage.data(), garbage.size(), 0, to, flen);
      // flood: from the first datagram on, oversize and full-size datagrams without pause
      // until the test ends (the kernel drops what the client's buffer cannot hold, so only a
      // steady stream reaches the client's bound within its deadline).
      if (mode == "flood")
        while (!stop)
          for (int i = 0; i < 64; ++i)
            ::sendto(fd, i % 8 ? garbage.data() : big.data(), i % 8 ? garbage.size() : big.size(),
                     0, to, flen);
    }
  }
  ~hostile_udp() {
    stop = true;
    th.join();
    ::close(fd);
  }
};

}  // namespace

TEST_CASE(
    "QUIC probe: nginx 1.30.x (OpenSSL 3.6): resumption as TCP, one ticket key, 0-RTT, Retry and "
    "NEW_TOKEN") {
  on_quic_version("1.30", true);
}

TEST_CASE(
    "QUIC probe: nginx 1.26.3 with http_v3: resumption as TCP, one ticket key, 0-RTT, Retry and "
    "NEW_TOKEN") {
  on_quic_version("1.26", false);
}

TEST_CASE(
    "QUIC probe: the Debian ngtcp2 example server (GnuTLS): handshake, resumption, 0-RTT, Retry") {
  if (!std::filesystem::exists("/usr/sbin/gtlsserver")) {
    std::cout << "NGXTLS_SKIP: ngtcp2-server (gtlsserver) not installed" << std::endl;
    return;
  }
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string());
  std::filesystem::create_directories(dir.path() / "htdocs");
  int port = free_udp_port();
  // -V: address validation with Retry (and NEW_TOKEN) for every new client.
  server_process srv({"/usr/sbin/gtlsserver", "-q", "-V", "-d", (dir.path() / "htdocs").string(),
                      "127.0.0.1", std::to_string(port), pki.leaf_key, pki.chain},
                     (dir.path() / "server.log").string());
  probe::quic_result q;
  for (int i = 0; i < 20; ++i) {  // until it listens (it binds UDP: no TCP port to wait for)
    q = quic_probe_port(port, 5, true, 1000);
    if (!q.error) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE_MESSAGE(!q.error, (q.error.value_or("") + "\n" + srv.log()));
  CHECK(q.alpn == "h3");
  CHECK(q.retry);
  CHECK(q.new_token_received);
  CHECK(q.retry_with_token == false);
  CHECK(q.attempts == 5);
  CHECK(q.rate == 1.0);
  CHECK(q.tickets >= 1);
  CHECK(q.http_statuses.count(404) + q.http_statuses.count(200) > 0);
  REQUIRE(q.early_data_tried);
  CHECK(q.early_first.outcome == probe::early_data_outcome::accepted);
}

TEST_CASE("QUIC probe: hostile UDP servers end as clear errors within the timeout") {
  auto timed = [](int port) {
    auto t0 = std::chrono::steady_clock::now();
    auto q = quic_probe_port(port, 5, false, 1000);
    CHECK(ms_since(t0) < 2500);
    return q;
  };
  {
    hostile_udp silent("silent");
    auto q = timed(silent.port);
    REQUIRE(q.error);
    INFO("error: ", *q.error);
    CHECK(q.error->find(
              "the QUIC handshake timed out after 1000 ms (no datagram from the server)") == 0);
  }
  {
    hostile_udp garbage("garbage");
    auto q = timed(garbage.port);
    REQUIRE(q.error);
    INFO("error: ", *q.error);
    CHECK(q.error->find("the QUIC handshake timed out after 1000 ms (") == 0);
    CHECK(q.error->find("datagrams") != std::string::npos);
  }
  {
    hostile_udp flood("flood");
    auto q = timed(flood.port);
    REQUIRE(q.error);
    INFO("error: ", *q.error);
    CHECK(q.error->find("bytes on one QUIC connection") != std::string::npos);
  }
  {
    // --total-timeout bounds the phase below --timeout: 1200 ms, not 5000.
    hostile_udp silent("silent");
    socklen_t len = 0;
    auto addr = loopback(silent.port, len);
    probe::quic_probe_options o;
    o.attempts = 5;
    o.timeout_ms = 5000;
    o.total_timeout_ms = 1200;
    o.sni = "localhost";
    auto t0 = std::chrono::steady_clock::now();
    auto q = probe::run_quic_probe(addr, len, o);
    CHECK(ms_since(t0) < 2500);
    REQUIRE(q.error);
    INFO("error: ", *q.error);
    const auto at = q.error->find("timed out after ");
    REQUIRE(at != std::string::npos);
    const int bound_ms = std::stoi(q.error->substr(at + 16));
    CHECK(bound_ms > 1000);
    CHECK(bound_ms <= 1200);
  }
  {
    auto q = timed(free_udp_port());
    REQUIRE(q.error);
    INFO("error: ", *q.error);
    CHECK(q.error->find("nothing listens on that UDP port") != std::string::npos);
  }
}
