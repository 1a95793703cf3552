// `ngxtls serve`'s HTTP front against hostile local clients, as a process on loopback: every
// limit docs/limits.md states for the exporter, sent to the real server over raw sockets
// (chunked bodies, Range, idle and excess connections, pipelining, oversized request lines and
// headers), and the behaviours around it: one probe per endpoint however it is spelled, basic
// auth that takes as long for an unknown user as for a wrong password, SIGHUP applying the HTTP
// settings, per-scrape parameters and debug=true, the warning for a non-loopback listen.
#include <arpa/inet.h>
#include <crypt.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include "probe_util.hpp"
#include "serve_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

using clock_type = std::chrono::steady_clock;

// A raw TCP client of 127.0.0.1:port: what a hostile local process can send.
struct raw_client {
  int fd = -1;
  explicit raw_client(int port) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ~raw_client() {
    if (fd >= 0) ::close(fd);
  }
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;

  // False once the peer stopped reading (reset or closed).
  bool send_all(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Reads until the peer closes, `timeout_ms` passes or `max_bytes` arrived; `closed` says
  // whether the peer closed (EOF or reset).
  std::string read_all(int timeout_ms, bool* closed = nullptr, std::size_t max_bytes = 1 << 20) {
    std::string got;
    const auto until = clock_type::now() + std::chrono::milliseconds(timeout_ms);
    bool eof = false;
    while (got.size() < max_bytes) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now()).count();
      if (left <= 0) break;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      char buf[16384];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        eof = true;
        break;
      }
      got.append(buf, static_cast<std::size_t>(n));
    }
    if (closed) *closed = eof;
    return got;
  }
};

// How many HTTP/1.1 status lines `text` holds (one per answer on a connection; the bodies here
// end in a newline and never hold one).
int answers_in(const std::string& text) {
  int n = 0;
  for (std::size_t at = 0; (at = text.find("HTTP/1.1 ", at)) != std::string::npos; at += 9)
    if (at == 0 || text[at - 1] == '\n') ++n;
  return n;
}

// The status of the first answer in `text`, 0 when there is none.
int status_of(const std::string& text) {
  if (text.rfind("HTTP/1.", 0) != 0 || text.size() < 12) return 0;
  return std::atoi(text.substr(9, 3).c_str());
}

long status_kb(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}

std::string metrics_of(const serve_process& s) {
  auto c = s.client();
  auto r = c.Get("/metrics");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return r->body;
}

double probes_run(const serve_process& s, const std::string& module) {
  const auto m = metrics_of(s);
  return sample(m, "ngxtls_serve_probes_total{module=\"" + module + "\",result=\"success\"}") +
         sample(m, "ngxtls_serve_probes_total{module=\"" + module + "\",result=\"failure\"}");
}

std::string bcrypt_hash(const std::string& password, int cost) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(::crypt_gensalt_rn("$2y$", static_cast<unsigned long>(cost), nullptr, 0, salt,
                             sizeof salt) != nullptr);
  crypt_data cd{};
  return ::crypt_r(password.c_str(), salt, &cd);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A TCP listener on 127.0.0.1 that never accepts: a probe of it waits for its deadline.
struct silent_listener {
  int fd = -1;
  int port = 0;
  silent_listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 64) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~silent_listener() { ::close(fd); }
};

const std::string fast_module = "[modules.fast]\nattempts = 2\nocsp = false\n";

int one_answer(const std::string& text, bool head_request = false);

}  // namespace

TEST_CASE("serve front: a chunked request body is refused before it is read") {
  temp_dir d;
  serve_process srv(d, "allow = []\n");
  const long before_kb = status_kb(srv.proc->pid(), "VmRSS");
  raw_client c(srv.port);
  REQUIRE(c.fd >= 0);
  REQUIRE(c.send_all("POST /-/healthy HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"));
  // 64 MiB of chunks, or until the exporter stops reading.
  const std::string chunk = "100000\r\n" + std::string(0x100000, 'a') + "\r\n";
  std::size_t sent_mib = 0;
  while (sent_mib < 64 && c.send_all(chunk)) ++sent_mib;
  bool closed = false;
  const auto got = c.read_all(5000, &closed);
  CAPTURE(sent_mib);
  CHECK(status_of(got) == 413);
  CHECK(closed);
  // The body was not kept: resident memory grew by far less than what was sent.
  const long after_kb = status_kb(srv.proc->pid(), "VmHWM");
  CAPTURE(before_kb);
  CAPTURE(after_kb);
  CHECK(after_kb - before_kb < 16 * 1024);
  // And with a Content-Length: the same answer, nothing read.
  raw_client l(srv.port);
  REQUIRE(l.send_all("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n"));
  CHECK(status_of(l.read_all(5000)) == 413);
  auto ok = srv.client().Get("/-/healthy");
  REQUIRE(ok);
  CHECK(ok->status == 200);
}

TEST_CASE("serve front: a Range header with thousands of ranges gets the whole answer once") {
  temp_dir d;
  serve_process srv(d, "allow = []\n");
  raw_client plain(srv.port);
  REQUIRE(plain.send_all("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const auto whole = plain.read_all(5000);
  REQUIRE(status_of(whole) == 200);
  std::string ranges = "bytes=0-";
  for (int i = 0; i < 2000; ++i) ranges += ",0-";
  raw_client c(srv.port);
  REQUIRE(c.send_all("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nRange: " + ranges +
                     "\r\n\r\n"));
  bool closed = false;
  const auto got = c.read_all(5000, &closed, 64 << 20);
  CHECK(closed);
  // Range is not served: a 200 with the page once (or a refusal), never 206 with each range.
  CHECK(status_of(got) != 206);
  CHECK(got.size() < 2 * whole.size() + 1024);
}

TEST_CASE("serve front: 200 idle connections do not delay a scrape and are dropped") {
  temp_dir d;
  serve_process srv(d, "allow = []\n");  // http_read_timeout_ms 5000, http_threads 32
  std::vector<std::unique_ptr<raw_client>> idle;
  for (int i = 0; i < 200; ++i) {
    idle.push_back(std::make_unique<raw_client>(srv.port));
    REQUIRE(idle.back()->fd >= 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto t0 = clock_type::now();
  auto h = srv.client().Get("/-/healthy");
  REQUIRE(h);
  CHECK(h->status == 200);
  CHECK(ms_since(t0) < 1000);
  // A /probe (answered by a worker thread: here 403, the allow list is empty) is not delayed.
  t0 = clock_type::now();
  auto p = srv.probe("127.0.0.1:1");
  REQUIRE(p);
  CHECK(p->status == 403);
  CHECK(ms_since(t0) < 1000);
  // The idle ones are closed after http_read_timeout_ms (5 s), not held.
  t0 = clock_type::now();
  int closed_count = 0;
  for (auto& c : idle) {
    bool closed = false;
    c->read_all(std::max(1, 8000 - static_cast<int>(ms_since(t0))), &closed);
    closed_count += closed;
  }
  CHECK(closed_count == 200);
  CHECK(ms_since(t0) < 8000);
}

TEST_CASE(
    "serve front: 1500 connections that send nothing or drip do not keep a scrape out: the "
    "connection waiting longest for its request head gives way") {
  // 1,500 client sockets here and three descriptors per connection in the exporter.
  rlimit files{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &files) == 0);
  if (files.rlim_cur < 4096) {
    files.rlim_cur = std::min<rlim_t>(4096, files.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  REQUIRE(files.rlim_cur >= 2000);
  temp_dir d;
  // Deadlines far away (http_header_timeout_ms keeps its default of 10 s, longer than this
  // test): what lets the scrape in is the slot it takes, not a timeout.
  serve_process srv(d, "allow = []\nhttp_read_timeout_ms = 60000\n");
  std::vector<std::unique_ptr<raw_client>> held;
  for (int i = 0; i < 1500; ++i) {
    held.push_back(std::make_unique<raw_client>(srv.port));
    REQUIRE(held.back()->fd >= 0);
    // Half of them start a request and drip it; the others send nothing.
    if (i % 2 == 0) held.back()->send_all("GET / HTTP/1.1\r\nX-Drip: ");
  }
  std::atomic<bool> dripping{true};
  std::thread drip([&] {
    while (dripping) {
      for (std::size_t i = 0; i < held.size(); i += 2)
        ::send(held[i]->fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (const char* path : {"/-/healthy", "/metrics"}) {
    CAPTURE(path);
    httplib::Client c("127.0.0.1", srv.port);
    c.set_connection_timeout(std::chrono::seconds(5));
    c.set_read_timeout(std::chrono::seconds(5));
    const auto t0 = clock_type::now();
    auto r = c.Get(path);
    CHECK(r);
    if (r) CHECK(r->status == 200);
    CHECK(ms_since(t0) < 3000);
  }
  dripping = false;
  drip.join();
}

TEST_CASE(
    "serve front: when all 512 connections are being answered a new one waits unserved until a "
    "slot frees") {
  silent_listener target;
  temp_dir d;
  serve_process srv(d, "allow = [\"127.0.0.1:*\"]\n[modules.slow]\ntimeout_ms = 60000\n");
  // 512 scrapes of a target that never answers, each with a 3 s scrape timeout: all 512
  // connections are waiting for their answer (one shared probe), none for a request head.
  const std::string scrape = "GET /probe?target=127.0.0.1:" + std::to_string(target.port) +
                             "&module=slow HTTP/1.1\r\nHost: x\r\n"
                             "X-Prometheus-Scrape-Timeout-Seconds: 3\r\n\r\n";
  std::vector<std::unique_ptr<raw_client>> busy;
  const auto t0 = clock_type::now();
  for (int i = 0; i < 512; ++i) {
    busy.push_back(std::make_unique<raw_client>(srv.port));
    REQUIRE(busy.back()->fd >= 0);
    REQUIRE(busy.back()->send_all(scrape));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  raw_client extra(srv.port);
  REQUIRE(extra.fd >= 0);  // the kernel's backlog takes it
  REQUIRE(extra.send_all("GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const double waited_from_ms = ms_since(t0);
  CAPTURE(waited_from_ms);
  REQUIRE(waited_from_ms < 1500);
  // Nothing can give way before the scrapes are answered (about 2.5 s after they came).
  CHECK(extra.read_all(static_cast<int>(2000 - waited_from_ms)).empty());
  bool closed = false;
  const auto got = extra.read_all(5000, &closed);
  CHECK(one_answer(got) == 200);
  CHECK(ms_since(t0) < 6000);
  // Each scrape got its answer: the probe's result (200), or 503 for those that waited for a
  // worker thread past their deadline (http_threads is 32).
  std::map<int, int> statuses;
  for (auto& c : busy) ++statuses[one_answer(c->read_all(500))];
  CAPTURE(statuses[200]);
  CAPTURE(statuses[503]);
  CHECK(statuses[200] + statuses[503] == 512);
}

TEST_CASE(
    "serve front: a request head must be complete within http_header_timeout_ms however it "
    "drips, and SIGHUP applies a new one at once") {
  temp_dir d;
  serve_process srv(d,
                    "allow = []\nhttp_read_timeout_ms = 30000\nhttp_header_timeout_ms = 60000\n");
  // Opened before the reload: the new deadline applies to it too.
  raw_client before(srv.port);
  REQUIRE(before.send_all("GET / HTTP/1.1\r\n"));
  d.write("serve.toml",
          "allow = []\nhttp_read_timeout_ms = 30000\nhttp_header_timeout_ms = 1500\n");
  ::kill(srv.proc->pid(), SIGHUP);
  bool reloaded = false;
  for (int i = 0; i < 100 && !reloaded; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    reloaded = srv.log_has("configuration reloaded");
  }
  REQUIRE(reloaded);
  raw_client drip(srv.port), silent(srv.port);
  REQUIRE(drip.send_all("GET /-/healthy HTTP/1.1\r\nHost: x\r\n"));
  const auto t0 = clock_type::now();
  // A byte every 200 ms: far inside http_read_timeout_ms, never a whole head.
  std::string got;
  bool closed = false;
  while (!closed && ms_since(t0) < 6000) {
    ::send(drip.fd, "X", 1, MSG_NOSIGNAL);
    got += drip.read_all(200, &closed);
  }
  const double drip_ms = ms_since(t0);
  CAPTURE(got);
  CHECK(closed);
  CHECK(drip_ms > 1000);
  CHECK(drip_ms < 3500);
  CHECK(status_of(got) == 408);
  CHECK(answers_in(got) == 1);
  // A connection that sent nothing is closed at the same deadline, without an answer.
  bool silent_closed = false;
  CHECK(silent.read_all(3000, &silent_closed).empty());
  CHECK(silent_closed);
  bool before_closed = false;
  CHECK(status_of(before.read_all(3000, &before_closed)) == 408);
  CHECK(before_closed);
  auto h = srv.client().Get("/-/healthy");
  REQUIRE(h);
  CHECK(h->status == 200);
}

TEST_CASE("serve front: pipelined requests are all answered in order") {
  temp_dir d;
  serve_process srv(d, "allow = []\n");
  raw_client c(srv.port);
  REQUIRE(
      c.send_all("GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n"
                 "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                 "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  bool closed = false;
  const auto t0 = clock_type::now();
  const auto got = c.read_all(4000, &closed);
  CHECK(answers_in(got) == 3);
  CHECK(closed);
  CHECK(ms_since(t0) < 2000);
  const auto first = got.find("Healthy"), second = got.find("ngxtls_serve_probes_total"),
             third = got.find("HTTP/1.1 404");
  CHECK(first < second);
  CHECK(second < third);
  CHECK(third != std::string::npos);
}

TEST_CASE(
    "serve front: oversized request lines and header fields get 414 and 431 and smuggling shapes "
    "400") {
  temp_dir d;
  serve_process srv(d, "allow = []\n");
  {
    raw_client c(srv.port);
    REQUIRE(c.send_all("GET /probe?target=" + std::string(40000, 'a') +
                       " HTTP/1.1\r\nHost: x\r\n\r\n"));
    bool closed = false;
    CHECK(status_of(c.read_all(5000, &closed)) == 414);
    CHECK(closed);
  }
  {
    raw_client c(srv.port);
    REQUIRE(
        c.send_all("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(40000, 'b') + "\r\n\r\n"));
    bool closed = false;
    CHECK(status_of(c.read_all(5000, &closed)) == 431);
    CHECK(closed);
  }
  {
    std::string many = "GET / HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 5000; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
    raw_client c(srv.port);
    REQUIRE(c.send_all(many + "\r\n"));
    bool closed = false;
    CHECK(status_of(c.read_all(5000, &closed)) == 431);
    CHECK(closed);
  }
  {
    raw_client c(srv.port);
    REQUIRE(c.send_all("DELETE / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    CHECK(status_of(c.read_all(5000)) == 405);
  }
  // Hundreds of query parameters fill the connection's memory while they are parsed: refused
  // at once (libmicrohttpd alone left such a connection hanging until its timeout).
  for (int n : {65, 600, 3000}) {
    CAPTURE(n);
    std::string query = "target=a";
    for (int i = 0; i < n; ++i) query += "&p" + std::to_string(i) + "=1";
    raw_client c(srv.port);
    REQUIRE(c.send_all("GET /probe?" + query + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    const auto t0 = clock_type::now();
    bool closed = false;
    CHECK(status_of(c.read_all(5000, &closed)) == 414);
    CHECK(closed);
    CHECK(ms_since(t0) < 1000);
  }
  // A space before a field's colon and two Content-Lengths are how requests are smuggled.
  for (const char* smuggled :
       {"Transfer-Encoding : chunked\r\n", "Content-Length: 0\r\nContent-Length: 44\r\n"}) {
    CAPTURE(smuggled);
    raw_client c(srv.port);
    REQUIRE(c.send_all("GET /-/healthy HTTP/1.1\r\nHost: x\r\n" + std::string(smuggled) +
                       "\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
    bool closed = false;
    const auto got = c.read_all(5000, &closed);
    CHECK(status_of(got) == 400);
    CHECK(answers_in(got) == 1);
    CHECK(closed);
  }
  auto h = srv.client().Get("/-/healthy");
  REQUIRE(h);
  CHECK(h->status == 200);
}

TEST_CASE("serve front: every spelling of one endpoint is one probe within min_interval_seconds") {
  const int closed_port = free_port();  // nothing listens: each probe fails fast
  const std::string p = std::to_string(closed_port);
  temp_dir d;
  serve_process srv(d, "allow = [\"localhost:" + p + "\", \"[::1]:" + p +
                           "\"]\nmin_interval_seconds = 60\n" + fast_module);
  for (const std::string& t :
       {"localhost:" + p, "LOCALHOST:" + p, "Localhost.:" + p, "https://LocalHost:" + p + "/"}) {
    CAPTURE(t);
    auto r = srv.probe(t, "fast");
    REQUIRE(r);
    CHECK(r->status == 200);
  }
  CHECK(probes_run(srv, "fast") == 1);
  for (const std::string& t : {"[::1]:" + p, "[0:0::1]:" + p, "[0000:0000::0001]:" + p}) {
    CAPTURE(t);
    auto r = srv.probe(t, "fast");
    REQUIRE(r);
    CHECK(r->status == 200);
  }
  CHECK(probes_run(srv, "fast") == 2);
  CHECK(sample(metrics_of(srv), "ngxtls_serve_cache_hits_total") == 5);
}

TEST_CASE("serve front: basic auth takes as long for an unknown user as for a wrong password") {
  temp_dir d;
  auto web =
      d.write("web.yml", "basic_auth_users:\n  prometheus: '" + bcrypt_hash("right", 10) + "'\n");
  serve_process srv(d, "allow = []\n", {"--web.config.file", web.string()});
  auto timed = [&](const std::string& user, const std::string& password) {
    auto c = srv.client();
    c.set_basic_auth(user, password);
    const auto t0 = clock_type::now();
    auto r = c.Get("/metrics");
    const double ms = ms_since(t0);
    REQUIRE(r);
    CHECK(r->status == 401);
    return ms;
  };
  std::vector<double> unknown, wrong;
  for (int i = 0; i < 7; ++i) {
    unknown.push_back(timed("nobody" + std::to_string(i), "x"));
    wrong.push_back(timed("prometheus", "wrong" + std::to_string(i)));
  }
  const double mu = median(unknown), mw = median(wrong);
  CAPTURE(mu);
  CAPTURE(mw);
  // A bcrypt of cost 10 takes tens of ms here; an answer without one takes well under 5 ms. The
  // medians agree within a factor of 2 when both run one bcrypt, and differ 30-fold when not.
  CHECK(mw > 10);
  CHECK(mu > mw / 2);
  CHECK(mu < mw * 2);
  auto c = srv.client();
  c.set_basic_auth("prometheus", "right");
  auto ok = c.Get("/metrics");
  REQUIRE(ok);
  CHECK(ok->status == 200);
}

TEST_CASE("serve front: SIGHUP applies http_read_timeout_ms and http_threads") {
  silent_listener a, b, c;
  temp_dir d;
  serve_process srv(d,
                    "allow = [\"127.0.0.1:*\"]\nhttp_threads = 2\nhttp_read_timeout_ms = 20000\n"
                    "[modules.slow]\ntimeout_ms = 60000\n");
  d.write("serve.toml",
          "allow = [\"127.0.0.1:*\"]\nhttp_threads = 4\nhttp_read_timeout_ms = 1000\n"
          "[modules.slow]\ntimeout_ms = 60000\n");
  ::kill(srv.proc->pid(), SIGHUP);
  bool reloaded = false;
  for (int i = 0; i < 100 && !reloaded; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    reloaded = srv.log_has("configuration reloaded");
  }
  REQUIRE(reloaded);
  // A connection accepted after the reload is dropped after about 1 s, not 20 s.
  raw_client idle(srv.port);
  bool closed = false;
  auto t0 = clock_type::now();
  idle.read_all(8000, &closed);
  CHECK(closed);
  CHECK(ms_since(t0) < 4000);
  // Three slow probes at once need three HTTP threads: all end at their 2 s deadline (with
  // two threads the third would start only after another ended, too late to probe).
  t0 = clock_type::now();
  std::vector<std::future<httplib::Result>> scrapes;
  for (int port : {a.port, b.port, c.port})
    scrapes.push_back(std::async(std::launch::async, [&srv, port] {
      return srv.probe("127.0.0.1:" + std::to_string(port), "slow", "2");
    }));
  for (auto& f : scrapes) {
    auto r = f.get();
    REQUIRE(r);
    CHECK(r->status == 200);
  }
  CHECK(ms_since(t0) < 2500);
  CHECK(probes_run(srv, "slow") == 3);
}

TEST_CASE(
    "serve front: /probe takes sni connect protocol and debug and refuses unknown parameters") {
  temp_dir site;
  tls::pki_options po;
  po.dns_names = {"localhost", "alt.example.test"};
  auto pki = tls::make_pki((site.path() / "pki").string(), po);
  const int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(1, tls_server(port, pki, "ssl_session_cache shared:SSL:1m;")), no);
  const std::string p = std::to_string(port);
  temp_dir d;
  serve_process srv(d,
                    "allow = [\"127.0.0.1:" + p + "\", \"backend.example.test:" + p +
                        "\"]\nmin_interval_seconds = 0\n" + fast_module +
                        "[modules.tls13]\nattempts = 2\nocsp = false\nprotocols = [\"TLSv1.3\"]\n");
  auto get = [&](const httplib::Params& params) {
    auto c = srv.client();
    return c.Get("/probe", params, httplib::Headers{});
  };
  auto unknown = get({{"target", "127.0.0.1:" + p}, {"module", "fast"}, {"modul", "x"}});
  REQUIRE(unknown);
  CHECK(unknown->status == 400);
  CHECK(unknown->body.find("unknown parameter \"modul\"") != std::string::npos);

  // connect: the name does not resolve; the address dialled is the allowed 127.0.0.1.
  auto via = get({{"target", "backend.example.test:" + p},
                  {"connect", "127.0.0.1:" + p},
                  {"sni", "alt.example.test"},
                  {"module", "fast"}});
  REQUIRE(via);
  INFO(via->body);
  CHECK(via->status == 200);
  CHECK(sample(via->body, "ngxtls_probe_success") == 1);
  auto outside = get({{"target", "127.0.0.1:" + p}, {"connect", "127.0.0.2:" + p}});
  REQUIRE(outside);
  CHECK(outside->status == 403);
  CHECK(outside->body.find("connect \"127.0.0.2:" + p + "\" is not in the allow list") !=
        std::string::npos);

  auto t12 = get({{"target", "127.0.0.1:" + p}, {"module", "fast"}, {"protocol", "tls1.2"}});
  REQUIRE(t12);
  CHECK(t12->status == 200);
  CHECK(t12->body.find("protocol=\"TLSv1.2\"") != std::string::npos);
  CHECK(t12->body.find("protocol=\"TLSv1.3\"") == std::string::npos);
  auto not_in_module =
      get({{"target", "127.0.0.1:" + p}, {"module", "tls13"}, {"protocol", "tls1.2"}});
  REQUIRE(not_in_module);
  CHECK(not_in_module->status == 400);
  auto bad_protocol = get({{"target", "127.0.0.1:" + p}, {"protocol", "sslv3"}});
  REQUIRE(bad_protocol);
  CHECK(bad_protocol->status == 400);
  auto bad_sni = get({{"target", "127.0.0.1:" + p}, {"sni", "10.0.0.1"}});
  REQUIRE(bad_sni);
  CHECK(bad_sni->status == 400);
  // An empty label: the allow list would match "backend.example.test" while the dial went to
  // "backend.example.test." (canonical_host drops one trailing dot).
  for (const char* name : {"backend.example.test..", "backend..example.test"}) {
    auto empty_label = get({{"target", std::string(name) + ":" + p}, {"module", "fast"}});
    REQUIRE(empty_label);
    CAPTURE(name);
    CHECK(empty_label->status == 400);
    CHECK((empty_label->body.find("has an empty label") != std::string::npos ||
           empty_label->body.find("malformed target") != std::string::npos));
  }

  auto debug = get({{"target", "127.0.0.1:" + p},
                    {"module", "fast"},
                    {"sni", "alt.example.test"},
                    {"debug", "true"}});
  REQUIRE(debug);
  INFO(debug->body);
  CHECK(debug->status == 200);
  CHECK(debug->get_header_value("Content-Type").rfind("text/plain", 0) == 0);
  CHECK(debug->body.find("Logs for the probe:") != std::string::npos);
  CHECK(debug->body.find("sni=alt.example.test") != std::string::npos);
  CHECK(debug->body.find("Metrics that would have been returned:") != std::string::npos);
  CHECK(debug->body.find("\nngxtls_probe_success 1\n") != std::string::npos);
  CHECK(debug->body.find("Module configuration:") != std::string::npos);
  // Never key material: no session, master secret or private key.
  for (const char* secret : {"Master-Key", "BEGIN SSL SESSION", "PRIVATE KEY", "master"})
    CHECK(debug->body.find(secret) == std::string::npos);
}

TEST_CASE("serve front: a non-loopback listen without basic auth warns who can reach it") {
  temp_dir d;
  auto config = d.write("serve.toml", "allow = []\n");
  // Port 0 on every address, stopped as soon as it has started: nothing is sent to it.
  auto r = run({"timeout", "-s", "TERM", "2", ngxtls_binary(), "serve", "--listen", "0.0.0.0:0",
                "--config", config.string()});
  CHECK(r.err.find("listening on http://0.0.0.0:") != std::string::npos);
  CHECK(r.err.find("warning: 0.0.0.0:") != std::string::npos);
  CHECK(r.err.find("every host that can reach this machine") != std::string::npos);
  r = run({"timeout", "-s", "TERM", "2", ngxtls_binary(), "serve", "--listen", "127.0.0.1:0",
           "--config", config.string()});
  CHECK(r.err.find("listening on http://127.0.0.1:") != std::string::npos);
  CHECK(r.err.find("warning: 127.0.0.1") == std::string::npos);
  auto web = d.write("web.yml", "basic_auth_users:\n  u: '" + bcrypt_hash("p", 4) + "'\n");
  r = run({"timeout", "-s", "TERM", "2", ngxtls_binary(), "serve", "--listen", "0.0.0.0:0",
           "--config", config.string(), "--web.config.file", web.string()});
  CHECK(r.err.find("listening on http://0.0.0.0:") != std::string::npos);
  CHECK(r.err.find("is not a loopback address") == std::string::npos);
}

namespace {

// The status of `text` when it is exactly one well-formed answer: one status line, one block of
// header fields with exactly one Content-Length, that many body bytes and nothing after them.
// 0 otherwise (a second header block, a missing or repeated length, trailing bytes).
int one_answer(const std::string& text, bool head_request) {
  const auto end = text.find("\r\n\r\n");
  if (text.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return 0;
  int lengths = 0;
  std::size_t length = 0;
  for (std::size_t at = text.find("\r\n") + 2; at < end + 2;) {
    const auto next = text.find("\r\n", at);
    const std::string line = text.substr(at, next - at);
    if (line.rfind("HTTP/", 0) == 0) return 0;
    if (line.size() > 15 && ::strncasecmp(line.c_str(), "content-length:", 15) == 0) {
      ++lengths;
      length = std::stoul(line.substr(15));
    }
    at = next + 2;
  }
  if (lengths != 1 || text.size() != end + 4 + (head_request ? 0 : length)) return 0;
  return status_of(text);
}

// Sends `request` on a fresh connection; the answer and whether the exporter closed after it.
std::string exchange(int port, const std::string& request, bool* closed) {
  raw_client c(port);
  REQUIRE(c.fd >= 0);
  c.send_all(request);
  return c.read_all(5000, closed);
}

// A TLS client that sends raw bytes: what a hostile client can send inside TLS.
struct tls_raw_client {
  raw_client tcp;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = nullptr;
  bool connected = false;
  explicit tls_raw_client(int port) : tcp(port) {
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, tcp.fd);
    SSL_set_tlsext_host_name(ssl, "localhost");
    connected = SSL_connect(ssl) == 1;
  }
  ~tls_raw_client() {
    SSL_free(ssl);
    SSL_CTX_free(ctx);
  }
  tls_raw_client(const tls_raw_client&) = delete;
  tls_raw_client& operator=(const tls_raw_client&) = delete;
  bool send_all(const std::string& data) {
    return SSL_write(ssl, data.data(), static_cast<int>(data.size())) ==
           static_cast<int>(data.size());
  }
  std::string read_all(int timeout_ms, bool* closed) {
    std::string got;
    const auto until = clock_type::now() + std::chrono::milliseconds(timeout_ms);
    *closed = false;
    while (clock_type::now() < until) {
      if (SSL_pending(ssl) == 0) {
        pollfd p{tcp.fd, POLLIN, 0};
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now())
                .count();
        if (::poll(&p, 1, static_cast<int>(std::max<long>(1, left))) <= 0) break;
      }
      char buf[16384];
      const int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) {
        *closed = true;
        break;
      }
      got.append(buf, static_cast<std::size_t>(n));
    }
    return got;
  }
};

}  // namespace

TEST_CASE(
    "serve front: malformed Content-Length, a missing Host and a header flood get exactly one "
    "well-formed answer and a close") {
  temp_dir d;
  serve_process srv(d, "allow = []\n");
  std::string cookies;
  for (int i = 0; i < 3000; ++i) cookies += "Cookie: c" + std::to_string(i) + "=v\r\n";
  std::string few_cookies;
  for (int i = 0; i < 150; ++i) few_cookies += "Cookie: c" + std::to_string(i) + "=v\r\n";
  const std::vector<std::pair<std::string, std::vector<int>>> cases = {
      {"Host: x\r\nContent-Length: 0, 5\r\n", {400}},
      {"Host: x\r\nContent-Length: -1\r\n", {400}},
      {"Host: x\r\nContent-Length: +5\r\n", {400}},
      {"Host: x\r\nContent-Length: abc\r\n", {400}},
      {"Host: x\r\nContent-Length: 12345678901234567890123\r\n", {400, 413}},
      {"Host: x\r\nContent-Length: 5, 5\r\n", {400}},
      {"", {400}},  // no Host
      {"Host: x\r\nHost: y\r\n", {400}},
      {"Host: x\r\n" + cookies, {431}},
      {"Host: x\r\n" + few_cookies, {431}},  // 150 fields in 2.6 KB: the count, not the size
  };
  for (const auto& [fields, statuses] : cases) {
    CAPTURE(fields.substr(0, 60));
    bool closed = false;
    const auto got = exchange(
        srv.port, "GET /-/healthy HTTP/1.1\r\n" + fields + "\r\nGET /metrics HTTP/1.1\r\n\r\n",
        &closed);
    CAPTURE(got.substr(0, 400));
    const int status = one_answer(got);
    CHECK(std::find(statuses.begin(), statuses.end(), status) != statuses.end());
    CHECK(closed);
  }
  // HTTP/1.0 needs no Host.
  bool closed = false;
  CHECK(one_answer(exchange(srv.port, "GET /-/healthy HTTP/1.0\r\n\r\n", &closed)) == 200);
  // No request has a body, so an Expect field has nothing to wait for: one answer, no interim
  // 100 Continue before it.
  CHECK(one_answer(exchange(srv.port,
                            "GET /-/healthy HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                            "Connection: close\r\n\r\n",
                            &closed)) == 200);
}

TEST_CASE(
    "serve front: an empty field name, obs-fold and control bytes in a header are a 400 and the "
    "bytes after them are never a second request") {
  temp_dir d;
  serve_process srv(d, "allow = []\n");
  const std::string second = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::vector<std::string> shapes = {
      ": v\r\n",
      "Transfer-Encoding:\r\n chunked\r\n",
      "X-A: a\r\n\tb\r\n",
      std::string("X-A: a\0b\r\n", 10),
      std::string("X-A\0: b\r\n", 9),
      "X-A: a\rb\r\n",
      "X-A: a\x01"
      "b\r\n",
      "X-A: a\x7f"
      "b\r\n",
      "X-A: a\nX-B: b\r\n",
      "X-A b: c\r\n",
      "X-A\r\n",
  };
  {
    bool closed = false;
    CHECK(one_answer(exchange(srv.port, "GET / HTTP/1.2\r\nHost: x\r\n\r\n", &closed)) == 505);
    CHECK(closed);
    CHECK(one_answer(exchange(srv.port, "GET /  HTTP/1.1\r\nHost: x\r\n\r\n", &closed)) == 400);
    // Empty lines before the request line are skipped (RFC 9112 section 2.2).
    CHECK(one_answer(exchange(srv.port,
                              "\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                              &closed)) == 200);
  }
  for (const auto& shape : shapes) {
    CAPTURE(shape);
    bool closed = false;
    const auto got = exchange(
        srv.port, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n" + shape + "\r\n" + second, &closed);
    CAPTURE(got.substr(0, 400));
    CHECK(one_answer(got) == 400);
    CHECK(closed);
    CHECK(got.find("ngxtls_serve_probes_total") == std::string::npos);
  }
  // An obs-folded Transfer-Encoding with a chunked body: refused before the body, which is never
  // read as a request either.
  bool closed = false;
  const auto got = exchange(srv.port,
                            "POST /-/healthy HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n "
                            "chunked\r\n\r\n" +
                                std::string("20\r\n") + second.substr(0, 32) + "\r\n0\r\n\r\n",
                            &closed);
  CHECK(one_answer(got) == 400);
  CHECK(closed);
}

TEST_CASE(
    "serve front: basic auth never accepts a header cut at a NUL, also on a kept-alive "
    "connection and over TLS") {
  temp_dir d;
  auto pki = tls::make_pki((d.path() / "pki").string(), {});
  auto web =
      d.write("web.yml", "basic_auth_users:\n  prometheus: '" + bcrypt_hash("right", 4) + "'\n");
  serve_process srv(d, "allow = []\n", {"--web.config.file", web.string()});
  const std::string valid = "cHJvbWV0aGV1czpyaWdodA==";  // base64 of "prometheus:right"
  const std::string good =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + valid + "\r\n\r\n";
  const std::string cut = "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + valid +
                          std::string("\0junk", 5) + "\r\n\r\n";
  bool closed = false;
  {
    // A kept-alive connection: the first request is checked, and so is the one after it.
    raw_client c(srv.port);
    REQUIRE(c.send_all(good));
    const auto first = c.read_all(2000);
    CHECK(one_answer(first) == 200);
    REQUIRE(c.send_all(cut));
    const auto second = c.read_all(3000, &closed);
    CHECK(one_answer(second) == 400);
    CHECK(closed);
  }
  closed = false;
  CHECK(one_answer(exchange(srv.port, cut, &closed)) == 400);
  CHECK(closed);
  // Two Authorization fields: which one a parser takes is not to be guessed.
  CHECK(one_answer(exchange(srv.port,
                            "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + valid +
                                "\r\nAuthorization: Basic eDp5\r\n\r\n",
                            &closed)) == 400);

  // Over TLS the same checks hold: they are made on the decrypted request.
  temp_dir t;
  auto tls_web = t.write(
      "web.yml", "tls_server_config:\n  cert_file: " + pki.chain + "\n  key_file: " + pki.leaf_key +
                     "\nbasic_auth_users:\n  prometheus: '" + bcrypt_hash("right", 4) + "'\n");
  serve_process tls_srv(t, "allow = []\n", {"--web.config.file", tls_web.string()});
  std::string many_parameters;
  for (int i = 0; i < 70; ++i) many_parameters += "&a=1";
  for (const auto& [request, status] : std::vector<std::pair<std::string, int>>{
           {good, 200},
           {cut, 400},
           {"GET / HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", 400},
           {"GET / HTTP/1.1\r\nHost: x\r\nX:\r\n a\r\n\r\n", 400},
           {"GET / HTTP/1.1\r\nContent-Length: +5\r\n\r\n", 400},
           {"GET /probe?target=a" + many_parameters + " HTTP/1.1\r\nHost: x\r\n\r\n", 414}}) {
    CAPTURE(request);
    tls_raw_client c(tls_srv.port);
    REQUIRE(c.connected);
    REQUIRE(c.send_all(request));
    bool tls_closed = false;
    // A kept-alive connection (the 200) stays open: its answer is all there is to wait for.
    const auto got = c.read_all(status == 200 ? 1000 : 3000, &tls_closed);
    CHECK(one_answer(got) == status);
    if (status != 200) CHECK(tls_closed);
  }
}

TEST_CASE("serve front: a client that pipelines requests and never reads the answers is closed") {
  temp_dir d;
  serve_process srv(d, "allow = []\nhttp_read_timeout_ms = 1000\n");
  const long before_kb = status_kb(srv.proc->pid(), "VmRSS");
  raw_client c(srv.port);
  REQUIRE(c.fd >= 0);
  // 40,000 requests for the index page: about 28 MB of answers, far more than the socket
  // buffers hold, sent for as long as the exporter takes them.
  const std::string one = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string many;
  for (int i = 0; i < 40000; ++i) many += one;
  std::size_t sent = 0;
  const auto t0 = clock_type::now();
  bool refused = false;
  while (sent < many.size() && ms_since(t0) < 5000) {
    const ssize_t n =
        ::send(c.fd, many.data() + sent, many.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      refused = true;  // reset: the exporter closed it
      break;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  CAPTURE(sent);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  bool closed = refused;
  const auto got = c.read_all(5000, &closed, std::size_t{64} << 20);
  CHECK(closed);
  CHECK(answers_in(got) < 40000);
  const long after_kb = status_kb(srv.proc->pid(), "VmHWM");
  CAPTURE(before_kb);
  CAPTURE(after_kb);
  CHECK(after_kb - before_kb < 16 * 1024);
  auto h = srv.client().Get("/-/healthy");
  REQUIRE(h);
  CHECK(h->status == 200);
}
