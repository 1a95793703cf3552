// `ngxtls serve` as a process against real nginx: /probe, the cache, the bounds, bad input,
// a slowloris client, the scrape timeout, SIGHUP and SIGTERM, TLS and basic auth.
#include <arpa/inet.h>
#include <crypt.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "probe_util.hpp"
#include "serve_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

using clock_type = std::chrono::steady_clock;

struct site {
  temp_dir dir;
  tls::pki_paths pki = tls::make_pki((dir.path() / "pki").string(), {});
};

// A TCP listener on 127.0.0.1 that never accepts: the kernel completes the TCP handshake from
// the backlog and the TLS ClientHello is never answered, so a probe waits for its deadline.
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

std::string target_of(int port) {
  return "127.0.0.1:" + std::to_string(port);
}

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string metrics_of(const serve_process& s) {
  auto c = s.client();
  auto r = c.Get("/metrics");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return r->body;
}

const std::string fast_module = "[modules.fast]\nattempts = 5\nocsp = false\n";

}  // namespace

TEST_CASE(
    "serve: a healthy nginx scrapes as probe_success 1 with ratio 1 and a second scrape within "
    "min_interval_seconds is the cached result") {
  site s;
  const int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(1, tls_server(port, s.pki, "ssl_session_cache shared:SSL:1m;")),
                     no);
  temp_dir d;
  serve_process srv(
      d, "allow = [\"" + target_of(port) + "\"]\nmin_interval_seconds = 60\n" + fast_module);
  auto c = srv.client();
  auto index = c.Get("/");
  REQUIRE(index);
  CHECK(index->status == 200);
  CHECK(index->body.find("/probe?target=") != std::string::npos);
  auto healthy = c.Get("/-/healthy");
  REQUIRE(healthy);
  CHECK(healthy->status == 200);

  auto first = srv.probe(target_of(port), "fast");
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK(first->get_header_value("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  INFO(first->body);
  CHECK(sample(first->body, "probe_success") == 1);
  CHECK(sample(first->body, "ngxtls_probe_result_age_seconds") == 0);
  const std::string t13 = "{protocol=\"TLSv1.3\",mechanism=\"ticket\",mode=\"same_session\"}";
  CHECK(sample(first->body, "ngxtls_resumption_ratio" + t13) == 1);
  CHECK(sample(first->body, "ngxtls_resumption_attempts" + t13) == 5);
  CHECK(sample(first->body, "ngxtls_ticket_key_names" + t13) == 1);
  CHECK(sample(first->body, "probe_duration_seconds") > 0);
  CHECK(first->body.find("# TYPE ngxtls_resumption_ratio gauge\n") != std::string::npos);

  auto second = srv.probe(target_of(port), "fast");
  REQUIRE(second);
  CHECK(second->status == 200);
  CHECK(sample(second->body, "ngxtls_probe_result_age_seconds") > 0);
  CHECK(sample(second->body, "ngxtls_resumption_ratio" + t13) == 1);
  const auto m = metrics_of(srv);
  CHECK(sample(m, "ngxtls_serve_probes_total{module=\"fast\",result=\"success\"}") == 1);
  CHECK(sample(m, "ngxtls_serve_cache_hits_total") == 1);
  CHECK(sample(m, "ngxtls_serve_probe_duration_seconds_count") == 1);
  CHECK(sample(m, "ngxtls_serve_probes_in_flight") == 0);
  CHECK(sample(m, "process_resident_memory_bytes") > 0);
}

TEST_CASE("serve: bad requests get a clear HTTP error and the exporter keeps serving others") {
  site s;
  const int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(1, tls_server(port, s.pki, "")), no);
  temp_dir d;
  serve_process srv(d, "allow = [\"127.0.0.1:" + std::to_string(port) +
                           "\"]\nmin_interval_seconds = 0\n" + fast_module);
  struct bad {
    std::string target, module;
    int status;
    std::string says;
  };
  for (const auto& b : std::vector<bad>{
           {target_of(port), "nope", 400, "unknown module \"nope\""},
           {"example.com:443", "fast", 403, "is not in the allow list"},
           {"127.0.0.1:" + std::to_string(port + 1 == 65536 ? 1 : port + 1), "fast", 403,
            "is not in the allow list"},
           {"127.0.0.1:99999", "fast", 400, "malformed target"},
           {"ftp://127.0.0.1/", "fast", 400, "malformed target"},
           {"", "fast", 400, "the target parameter is missing"},
           {std::string(400, 'a') + ".example.com", "fast", 400, "longer than the limit of 300"},
           {"127.0.0.1:1 x", "fast", 400, "a space, a control character"},
       }) {
    CAPTURE(b.target);
    auto r = srv.probe(b.target, b.module);
    REQUIRE(r);
    CHECK(r->status == b.status);
    CHECK(r->body.find(b.says) != std::string::npos);
  }
  auto c = srv.client();
  // Beyond the 32 KiB a connection has for its request line: 414, not a probe.
  auto huge = c.Get("/probe?target=" + std::string(40000, 'a'));
  REQUIRE(huge);
  CHECK(huge->status == 414);
  auto twice = c.Get("/probe?target=" + target_of(port) + "&target=example.com:443&module=fast");
  REQUIRE(twice);
  CHECK(twice->status == 400);

  auto good = srv.probe(target_of(port), "fast");
  REQUIRE(good);
  CHECK(good->status == 200);
  CHECK(sample(good->body, "probe_success") == 1);
  const auto m = metrics_of(srv);
  CHECK(sample(m, "ngxtls_serve_requests_rejected_total{reason=\"unknown_module\"}") == 1);
  CHECK(sample(m, "ngxtls_serve_requests_rejected_total{reason=\"not_allowed\"}") == 2);
  CHECK(sample(m, "ngxtls_serve_requests_rejected_total{reason=\"bad_target\"}") == 5);
  // Only the good target was probed: nothing outside the allow list was reached.
  CHECK(sample(m, "ngxtls_serve_probes_total{module=\"fast\",result=\"success\"}") == 1);
  CHECK(sample(m, "ngxtls_serve_probes_total{module=\"fast\",result=\"failure\"}") == 0);
}

TEST_CASE(
    "serve: slowloris clients are dropped after http_read_timeout_ms and do not block "
    "others") {
  temp_dir d;
  serve_process srv(d, "allow = []\nhttp_threads = 4\nhttp_read_timeout_ms = 1000\n");
  std::vector<int> slow;
  for (int i = 0; i < 3; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(srv.port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    const std::string part = "GET /-/healthy HTTP/1.1\r\nHost: x\r\n";  // never finished
    REQUIRE(::send(fd, part.data(), part.size(), 0) == static_cast<ssize_t>(part.size()));
    slow.push_back(fd);
  }
  const auto t0 = clock_type::now();
  auto c = srv.client();
  auto r = c.Get("/-/healthy");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(ms_between(t0, clock_type::now()) < 900);
  for (int fd : slow) {
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    // Closed (without an answer: the request never ended), not left open until the 5 s bound.
    std::string got;
    char buf[256];
    ssize_t n = 0;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<std::size_t>(n));
    CHECK(n == 0);
    CHECK((got.empty() || got.rfind("HTTP/1.1 4", 0) == 0));
    ::close(fd);
  }
  // The exporter dropped them within the read timeout and a little more, not at the 5 s bound.
  CHECK(ms_between(t0, clock_type::now()) < 4000);
  auto after = c.Get("/-/healthy");
  REQUIRE(after);
  CHECK(after->status == 200);
}

TEST_CASE(
    "serve: a probe ends within the scrape timeout minus the margin and reports what it "
    "measured while a scrape that cannot start a probe in time gets 503") {
  silent_listener a, b;
  temp_dir d;
  serve_process srv(d,
                    "allow = [\"127.0.0.1:*\"]\nmax_probes_in_flight = 1\n"
                    "scrape_timeout_margin_ms = 500\n[modules.slow]\ntimeout_ms = 60000\n");
  // The silent target would hold a connection for the module's 60 s: the scrape's 2 s win.
  const auto t0 = clock_type::now();
  auto slow =
      std::async(std::launch::async, [&] { return srv.probe(target_of(a.port), "slow", "2"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The one slot is taken for about 1.5 s more; this scrape's 1 s (minus 0.5) cannot wait.
  const auto t1 = clock_type::now();
  auto busy = srv.probe(target_of(b.port), "slow", "1");
  REQUIRE(busy);
  CHECK(busy->status == 503);
  CHECK(ms_between(t1, clock_type::now()) < 1000);
  auto r = slow.get();
  const double elapsed = ms_between(t0, clock_type::now());
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(sample(r->body, "probe_success") == 0);
  // 2 s minus the 0.5 s margin, and the few ms the prober's loop takes to notice its deadline.
  CHECK(sample(r->body, "probe_duration_seconds") < 1.6);
  CHECK(elapsed < 2000);
  CHECK(elapsed >= 1400);
  const auto m = metrics_of(srv);
  CHECK(sample(m, "ngxtls_serve_requests_rejected_total{reason=\"busy\"}") == 1);
  CHECK(sample(m, "ngxtls_serve_probes_total{module=\"slow\",result=\"failure\"}") == 1);
  CHECK(srv.proc->log().find("probe failed: target=\"" + target_of(a.port) + "\"") !=
        std::string::npos);
}

TEST_CASE("serve: concurrent scrapes of one target share one probe") {
  silent_listener a;
  temp_dir d;
  serve_process srv(d,
                    "allow = [\"127.0.0.1:*\"]\nmin_interval_seconds = 60\n"
                    "[modules.slow]\ntimeout_ms = 60000\n");
  std::vector<std::future<httplib::Result>> scrapes;
  for (int i = 0; i < 3; ++i) {
    scrapes.push_back(std::async(std::launch::async,
                                 [&] { return srv.probe(target_of(a.port), "slow", "1.5"); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  int ok = 0;
  for (auto& f : scrapes) {
    auto r = f.get();
    REQUIRE(r);
    ok += r->status == 200;
  }
  CHECK(ok == 3);
  const auto m = metrics_of(srv);
  CHECK(sample(m, "ngxtls_serve_probes_total{module=\"slow\",result=\"failure\"}") == 1);
  CHECK(sample(m, "ngxtls_serve_cache_hits_total") == 2);
}

TEST_CASE(
    "serve: SIGHUP reloads the config (a broken one is refused and the old one kept) and "
    "SIGTERM answers the probe in flight and exits 0") {
  silent_listener a;
  temp_dir d;
  serve_process srv(d, "allow = [\"127.0.0.1:*\"]\n");
  CHECK(srv.probe(target_of(a.port), "extra")->status == 400);
  d.write("serve.toml", "allow = [\"127.0.0.1:*\"]\n[modules.extra]\ntimeout_ms = 60000\n");
  ::kill(srv.proc->pid(), SIGHUP);
  bool reloaded = false;
  for (int i = 0; i < 100 && !reloaded; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    reloaded = srv.log_has("configuration reloaded");
  }
  REQUIRE(reloaded);
  d.write("serve.toml", "allow = [\"127.0.0.1:*\"\n");  // a TOML syntax error
  ::kill(srv.proc->pid(), SIGHUP);
  bool refused = false;
  for (int i = 0; i < 100 && !refused; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    refused = srv.log_has("reload failed, keeping the running configuration");
  }
  REQUIRE(refused);
  CHECK(srv.log_has("serve.toml:2:1: TOML syntax error"));
  CHECK(sample(metrics_of(srv), "ngxtls_serve_config_reloads_total{result=\"failure\"}") == 1);

  auto in_flight =
      std::async(std::launch::async, [&] { return srv.probe(target_of(a.port), "extra", "3"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(srv.proc->pid(), SIGTERM);
  auto r = in_flight.get();
  REQUIRE(r);
  CHECK(r->status == 200);  // the module from the reload, answered before the exit
  CHECK(sample(r->body, "probe_success") == 0);
  CHECK(srv.proc->wait_exit(10000) == 0);
  CHECK_FALSE(port_accepts(srv.port));
}

TEST_CASE("serve: --web.config.file serves TLS and asks for basic auth without logging secrets") {
  temp_dir d;
  auto pki = tls::make_pki((d.path() / "pki").string(), {});
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(::crypt_gensalt_rn("$2y$", 5, nullptr, 0, salt, sizeof salt) != nullptr);
  crypt_data cd{};
  const std::string hash = ::crypt_r("correct horse", salt, &cd);
  auto web = d.write("web.yml", "tls_server_config:\n  cert_file: " + pki.chain +
                                    "\n  key_file: " + pki.leaf_key +
                                    "\nbasic_auth_users:\n  prometheus: '" + hash + "'\n");
  serve_process srv(d, "allow = []\n", {"--web.config.file", web.string()});
  httplib::SSLClient c("localhost", srv.port);
  c.set_ca_cert_path(pki.root_cert.c_str());
  c.enable_server_certificate_verification(true);
  auto anonymous = c.Get("/-/healthy");
  REQUIRE(anonymous);
  CHECK(anonymous->status == 401);
  CHECK(anonymous->get_header_value("WWW-Authenticate") == "Basic realm=\"ngxtls\"");
  c.set_basic_auth("prometheus", "wrong");
  auto wrong = c.Get("/metrics");
  REQUIRE(wrong);
  CHECK(wrong->status == 401);
  c.set_basic_auth("prometheus", "correct horse");
  // crypt() stops at a NUL: the bytes after it must still count.
  c.set_basic_auth("prometheus", std::string("correct horse\0x", 15));
  auto nul = c.Get("/metrics");
  REQUIRE(nul);
  CHECK(nul->status == 401);
  c.set_basic_auth("prometheus", "correct horse");
  auto right = c.Get("/metrics");
  REQUIRE(right);
  CHECK(right->status == 200);
  CHECK(right->body.find("ngxtls_serve_probes_total") != std::string::npos);
  // Plain HTTP to the TLS port gets no answer.
  httplib::Client plain("127.0.0.1", srv.port);
  plain.set_read_timeout(std::chrono::seconds(3));
  auto p = plain.Get("/-/healthy");
  CHECK((!p || p->status != 200));
  CHECK(srv.proc->log().find("correct horse") == std::string::npos);
  CHECK(srv.proc->log().find("listening on https://") != std::string::npos);
}

TEST_CASE("serve: input errors at start exit 2 with file:line:col") {
  temp_dir d;
  auto bad = d.write("bad.toml", "allow = [\"x\"]\n");
  auto r = run({ngxtls_binary(), "serve", "--listen", "127.0.0.1:0", "--config", bad.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("bad.toml:1:10: allow: \"x\": an entry is HOST:PORTS") != std::string::npos);
  auto web = d.write("web.yml", "basic_auth_users:\n  u: plain\n");
  r = run({ngxtls_binary(), "serve", "--listen", "127.0.0.1:0", "--web.config.file", web.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("web.yml:2:6: the password of \"u\" must be a bcrypt hash") !=
        std::string::npos);
  r = run({ngxtls_binary(), "serve", "--listen", "localhost:80"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is not an IPv4 address") != std::string::npos);

  // The exporter's own key: a FIFO at its path is refused without a blocking open(), an
  // encrypted key without a passphrase prompt. Both end at once with exit 2.
  auto pki = tls::make_pki((d.path() / "pki").string(), {});
  const auto fifo = d.path() / "key.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  web = d.write("fifo.yml", "tls_server_config:\n  cert_file: " + pki.chain +
                                "\n  key_file: " + fifo.string() + "\n");
  const auto started = std::chrono::steady_clock::now();
  r = run({"timeout", "-s", "KILL", "20", ngxtls_binary(), "serve", "--listen", "127.0.0.1:0",
           "--web.config.file", web.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("not a regular file") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
  const auto encrypted = d.path() / "enc.key";
  REQUIRE(run({"openssl", "pkey", "-in", pki.leaf_key, "-aes256", "-passout", "pass:x", "-out",
               encrypted.string()})
              .exit_code == 0);
  web = d.write("enc.yml", "tls_server_config:\n  cert_file: " + pki.chain +
                               "\n  key_file: " + encrypted.string() + "\n");
  r = run({"timeout", "-s", "KILL", "20", "setsid", "-w", ngxtls_binary(), "serve", "--listen",
           "127.0.0.1:0", "--web.config.file", web.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("an encrypted one") != std::string::npos);
  CHECK(r.err.find("pass phrase") == std::string::npos);
}
