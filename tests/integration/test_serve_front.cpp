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
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
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

TEST_CASE("serve front: connections beyond the limit wait unserved until a slot frees") {
  temp_dir d;
  serve_process srv(d, "allow = []\nhttp_read_timeout_ms = 30000\n");
  // 512 (the limit) held open and idle: one more is not served while they are.
  std::vector<std::unique_ptr<raw_client>> held;
  for (int i = 0; i < 512; ++i) {
    held.push_back(std::make_unique<raw_client>(srv.port));
    REQUIRE(held.back()->fd >= 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  raw_client extra(srv.port);
  REQUIRE(extra.fd >= 0);  // the kernel's backlog takes it; the exporter does not accept it
  REQUIRE(extra.send_all("GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  CHECK(extra.read_all(1500).empty());
  // One held connection goes: the waiting one is accepted and answered at once.
  held.pop_back();
  const auto t0 = clock_type::now();
  bool closed = false;
  const auto got = extra.read_all(3000, &closed);
  CHECK(status_of(got) == 200);
  CHECK(ms_since(t0) < 1500);
  held.clear();
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
