// probe --load against the real nginx: handshake capacity per phase, the price of resumption
// and of the certificate choice, the rate cap, a stalled or refusing server, Ctrl-C, and the
// JSON and Prometheus output. Each load is 1 s a phase so the file stays fast on 2 cores.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <set>
#include <sstream>
#include <thread>

#include "probe/load.hpp"
#include "probe_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

// A site with an RSA-2048 leaf (and optionally a P-256 one beside it), one worker.
struct site {
  temp_dir dir;
  tls::pki_paths rsa, ec;
  int port = free_port();
  std::unique_ptr<nginx_instance> ngx;
  explicit site(bool both = false, const std::string& extra = "") {
    tls::pki_options ro;
    ro.key_type = "rsa";
    rsa = tls::make_pki((dir.path() / "rsa").string(), ro);
    ec = tls::make_pki((dir.path() / "ec").string(), {});
    std::string more = extra;
    if (both)
      more += "\n  ssl_certificate " + ec.chain + ";\n  ssl_certificate_key " + ec.leaf_key + ";";
    nginx_options no;
    no.wait_ports = {port};
    ngx = std::make_unique<nginx_instance>(nginx_conf(1, tls_server(port, rsa, more)), no);
  }
};

probe::target local_target(int port) {
  return probe::parse_target("127.0.0.1:" + std::to_string(port), std::string("localhost"));
}

probe::load_options short_load(int concurrency = 4) {
  probe::load_options o;
  o.duration_s = 1;
  o.concurrency = concurrency;
  o.timeout_ms = 3000;
  return o;
}

const probe::load_phase_result& phase_of(const probe::load_result& l, probe::load_phase_kind k,
                                         probe::certificate_key key = probe::certificate_key::any) {
  for (const auto& p : l.phases)
    if (p.kind == k && p.key == key) return p;
  throw std::runtime_error("no load phase " + probe::phase_label(k, key));
}

void check_phase(const probe::load_phase_result& p) {
  CAPTURE(probe::phase_label(p.kind, p.key));
  CHECK(p.connections > 0);
  CHECK(p.failures == 0);
  CHECK(p.connections_per_s > 0);
  CHECK(p.elapsed_s == doctest::Approx(1.0).epsilon(0.2));
  CHECK(p.handshake_ms.count == static_cast<std::size_t>(p.connections));
  CHECK(p.handshake_ms.median <= p.handshake_ms.p90);
  CHECK(p.handshake_ms.p90 <= p.handshake_ms.p99);
  CHECK(p.client_cpu_share >= 0);
  CHECK(p.client_cpu_share <= 1);
  if (probe::is_resumed(p.kind)) CHECK(p.resumed == p.connections);
}

}  // namespace

TEST_CASE("capacity at a resumption rate is the harmonic mix of full and resumed capacity") {
  // 1 / (0.5 / 1000 + 0.5 / 4000) = 1 / 0.000625 = 1600.
  CHECK(probe::capacity_at(0.5, 1000, 4000) == doctest::Approx(1600));
  CHECK(probe::capacity_at(0.0, 1000, 4000) == doctest::Approx(1000));
  CHECK(probe::capacity_at(1.0, 1000, 4000) == doctest::Approx(4000));
  // 1 / (0.89 / 1460 + 0.11 / 4120) = 1571.6...
  CHECK(probe::capacity_at(0.11, 1460, 4120) == doctest::Approx(1571.6).epsilon(0.001));
  CHECK(probe::capacity_at(0.5, 0, 4000) == 0);
}

TEST_CASE("TLS 1.2 and 1.3: resumed capacity is above full capacity (RSA-2048 certificate)") {
  site s(false, "ssl_session_cache shared:S:1m;");
  auto t = local_target(s.port);
  auto probed = probe_port(s.port, quick(5));
  REQUIRE_FALSE(probed.error);
  auto l = probe::run_load(t, probed, short_load());
  CHECK_FALSE(l.interrupted);
  using enum probe::load_phase_kind;
  for (auto k : {full_tls13, psk_tls13, full_tls12, ticket_tls12, session_id_tls12})
    check_phase(phase_of(l, k));
  const auto& f12 = phase_of(l, full_tls12);
  const auto& t12 = phase_of(l, ticket_tls12);
  const auto& i12 = phase_of(l, session_id_tls12);
  MESSAGE("TLS 1.2 full " << f12.connections_per_s << "/s, ticket " << t12.connections_per_s
                          << "/s, session ID " << i12.connections_per_s << "/s, TLS 1.3 full "
                          << phase_of(l, full_tls13).connections_per_s << "/s, PSK "
                          << phase_of(l, psk_tls13).connections_per_s << "/s");
  CHECK(t12.connections_per_s > f12.connections_per_s);
  CHECK(i12.connections_per_s > f12.connections_per_s);
  CHECK(t12.handshake_ms.median < f12.handshake_ms.median);
  // Every run resumed fully: the price is the resumed capacity today and after.
  REQUIRE(l.prices.size() == 2);
  for (const auto& p : l.prices) {
    CHECK(p.resumption_rate == 1.0);
    CHECK(p.today_per_s == doctest::Approx(p.resumed_per_s));
    CHECK(p.gain == doctest::Approx(0));
  }
  CHECK_FALSE(l.certificate);  // one certificate only
}

TEST_CASE("RSA-2048 and P-256 on one server: the RSA full handshake is costlier") {
  site s(true);
  auto probed = probe_port(s.port, quick(3));
  REQUIRE_FALSE(probed.error);
  auto l = probe::run_load(local_target(s.port), probed, short_load());
  REQUIRE(l.certificate);
  using enum probe::certificate_key;
  check_phase(phase_of(l, probe::load_phase_kind::full_tls13, ecdsa));
  check_phase(phase_of(l, probe::load_phase_kind::full_tls13, rsa));
  MESSAGE("full TLS 1.3: ECDSA " << l.certificate->ecdsa_per_s << "/s, RSA "
                                 << l.certificate->rsa_per_s << "/s");
  CHECK(l.certificate->ecdsa_per_s > l.certificate->rsa_per_s);
  CHECK(phase_of(l, probe::load_phase_kind::full_tls13, ecdsa).handshake_ms.median <
        phase_of(l, probe::load_phase_kind::full_tls13, rsa).handshake_ms.median);
  CHECK(l.certificate->gain > 0);
  auto text = report::probe_text({[&] {
                                   auto r = probed;
                                   r.load = l;
                                   return r;
                                 }()},
                                 false);
  CHECK(text.find("full-handshake capacity by certificate") != std::string::npos);
}

TEST_CASE(
    "two masters with unshared ticket keys: capacity priced between all-full and "
    "all-resumed") {
  site s;
  nginx_options no;
  no.wait_ports = {s.port};
  std::string conf = nginx_conf(1, tls_server(s.port, s.rsa, "", "reuseport"));
  s.ngx.reset();
  nginx_instance a(conf, no);
  nginx_instance b(conf, no);
  auto probed = probe_port(s.port, quick(40));
  REQUIRE_FALSE(probed.error);
  auto l = probe::run_load(local_target(s.port), probed, short_load());
  REQUIRE(l.prices.size() >= 1);
  for (const auto& p : l.prices) {
    CAPTURE(probe::to_string(p.resumed));
    MESSAGE(probe::to_string(p.resumed)
            << ": r " << p.resumption_rate << ", F " << p.full_per_s << ", R " << p.resumed_per_s
            << ", today " << p.today_per_s);
    // Binomial(40, 1/2) in [5, 35] (test_probe_nginx): r strictly between 0 and 1.
    CHECK(p.resumption_rate > 0);
    CHECK(p.resumption_rate < 1);
    CHECK(p.today_per_s ==
          doctest::Approx(probe::capacity_at(p.resumption_rate, p.full_per_s, p.resumed_per_s)));
    // The resumed phase offers one session, so about half its connections resume: its rate
    // is itself a mix; the price holds whatever F and R are.
    CHECK(p.today_per_s >= std::min(p.full_per_s, p.resumed_per_s));
    CHECK(p.today_per_s <= std::max(p.full_per_s, p.resumed_per_s));
  }
  auto verdicts = report_verdicts_for_test([&] {
    auto r = probed;
    r.load = l;
    return r;
  }());
  CHECK(verdicts.find("fixing resumption") != std::string::npos);
}

TEST_CASE("--max-rate holds the connection rate") {
  site s;
  auto probed = probe_port(s.port, quick(3));
  REQUIRE_FALSE(probed.error);
  auto o = short_load(8);
  o.max_rate = 40;
  o.duration_s = 2;
  auto l = probe::run_load(local_target(s.port), probed, o);
  for (const auto& p : l.phases) {
    CAPTURE(probe::phase_label(p.kind, p.key));
    // 40/s for 2 s is 80 launches, plus the first launch at time 0; the machine may be slower.
    CHECK(p.connections <= 81);
    CHECK(p.connections_per_s <= 40 * 1.05);
    CHECK(p.connections_per_s >= 40 * 0.5);
  }
}

TEST_CASE("a stalled or refusing server ends a phase within its timeout with failures counted") {
  // What the ordinary probe saw before the server went away: TLS 1.2 spoken, nothing resumed.
  probe::target_result probed;
  probed.target = "127.0.0.1";
  probe::run_result run;
  run.protocol = probe::tls_protocol::tls1_2;
  run.connections = 1;
  probed.protocols.push_back(run);
  auto o = short_load(4);
  o.timeout_ms = 300;

  SUBCASE("stalled: the kernel accepts, nobody answers") {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 1024) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    int port = ntohs(a.sin_port);
    auto t0 = std::chrono::steady_clock::now();
    auto l = probe::run_load(local_target(port), probed, o);
    double ms = ms_since(t0);
    ::close(fd);
    const auto& p = phase_of(l, probe::load_phase_kind::full_tls12);
    CHECK(p.connections == 0);
    // 1 s of launches, each connection timing out after 300 ms: at least 4 * 3 failures.
    CHECK(p.failures >= 12);
    REQUIRE(p.last_error);
    CHECK(p.last_error->find("timed out") != std::string::npos);
    // The phase (1 s + 300 ms for the last ones) and two 300 ms key look-ups, with slack.
    CHECK(ms < 1000 + 300 + 2 * 300 + 1500);
  }
  SUBCASE("refusing: nothing listens") {
    int port = free_port();
    auto t0 = std::chrono::steady_clock::now();
    auto l = probe::run_load(local_target(port), probed, o);
    double ms = ms_since(t0);
    const auto& p = phase_of(l, probe::load_phase_kind::full_tls12);
    CHECK(p.connections == 0);
    CHECK(p.failures > 0);
    REQUIRE(p.last_error);
    CHECK(p.last_error->find("refused") != std::string::npos);
    CHECK(ms < 1000 + 1500);
  }
}

TEST_CASE("ngxtls probe --load: announces itself, JSON and Prometheus carry the figures") {
  site s(true);
  std::string target = "127.0.0.1:" + std::to_string(s.port);
  int rc = -1;
  std::string err;
  auto j = ngxtls_json({"probe", target, "--sni", "localhost", "--tls1.2", "-n", "3", "--no-ocsp",
                        "--load", "--duration", "1", "-c", "4", "--max-rate", "500"},
                       &rc, &err);
  CHECK(rc == 0);
  CHECK(err.find("ngxtls: load on " + target) != std::string::npos);
  CHECK(err.find("at most 500 connections/s") != std::string::npos);
  const auto& load = j.at("targets").at(0).at("load");
  CHECK(load.at("duration_s") == 1);
  CHECK(load.at("concurrency") == 4);
  CHECK(load.at("max_rate_per_s") == 500);
  CHECK(load.at("interrupted") == false);
  std::set<std::string> phases;
  for (const auto& p : load.at("phases")) {
    phases.insert(p.at("phase").get<std::string>() + "/" +
                  p.at("certificate_key").get<std::string>());
    CHECK(p.at("connections").get<int>() > 0);
    CHECK(p.at("handshake_ms").at("p99").is_number());
  }
  CHECK(phases == std::set<std::string>{"full_tls12/any", "ticket_tls12/any", "full_tls12/ecdsa",
                                        "full_tls12/rsa"});
  CHECK(load.at("prices").size() == 1);
  CHECK(load.at("certificate").at("rsa_per_s").get<double>() > 0);

  // A target name holding ESC (a --targets file can hold one) is escaped in the announcement on
  // stderr; --connect dials the site, so no name is resolved.
  auto r = run({ngxtls_binary(), "probe", std::string("a\x1b[2Jb:443"), "--connect", target,
                "--sni", "localhost", "--tls1.2", "-n", "3", "--no-ocsp", "--load", "--duration",
                "1", "--format", "prometheus"},
               "", 60);
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find('\x1b') == std::string::npos);
  CHECK(r.err.find("ngxtls: load on a\\x1b[2Jb:443") != std::string::npos);
  CHECK(r.out.find("ngxtls_load_connections_per_second{") != std::string::npos);
  CHECK(r.out.find("phase=\"ticket_tls12\"") != std::string::npos);
  CHECK(r.out.find("ngxtls_load_capacity_per_second{") != std::string::npos);
  CHECK(r.out.find("at=\"full_resumption\"") != std::string::npos);
  CHECK(r.out.find("ngxtls_load_certificate_capacity_per_second{") != std::string::npos);
}

TEST_CASE("Ctrl-C stops a load at once with the partial report and a non-zero exit") {
  site s;
  std::string target = "127.0.0.1:" + std::to_string(s.port);
  auto t0 = std::chrono::steady_clock::now();
  // SIGINT after 3 s: the ordinary probe is over, a 60 s phase has begun.
  auto r = run({"timeout", "--preserve-status", "-s", "INT", "3", ngxtls_binary(), "probe", target,
                "--sni", "localhost", "-n", "3", "--no-ocsp", "--load", "--duration", "60"},
               "", 60);
  double ms = ms_since(t0);
  CHECK(r.exit_code == 130);
  CHECK(ms < 8000);
  CHECK(r.out.find("load: 60 s per phase") != std::string::npos);
  CHECK(r.out.find("(interrupted)") != std::string::npos);
  CHECK(r.err.find("load interrupted") != std::string::npos);
}

TEST_CASE("Ctrl-C during the probe before the load stops at once with the partial report") {
  site s;
  std::string target = "127.0.0.1:" + std::to_string(s.port);
  // 200,000 resumption attempts one at a time keep the ordinary probe busy far beyond the
  // SIGINT at 1 s: the load has not begun.
  std::vector<std::string> argv{"timeout", "--preserve-status", "-s", "INT", "1"};
  std::vector<std::string> ngxtls{
      ngxtls_binary(), "probe",  target,       "--sni", "localhost", "-n",  "200000", "-c", "1",
      "--no-ocsp",     "--load", "--duration", "60",    "--format",  "json"};
  SUBCASE("SIGINT with its default disposition") {}
  SUBCASE("SIGINT ignored on entry, as in a script's background job") {
    // sh sets SIGINT to ignored and execs ngxtls, which inherits it; timeout signals that pid.
    argv.insert(argv.end(), {"sh", "-c", "trap '' INT; exec \"$@\"", "sh"});
  }
  argv.insert(argv.end(), ngxtls.begin(), ngxtls.end());
  auto t0 = std::chrono::steady_clock::now();
  auto r = run(argv, "", 60);
  double ms = ms_since(t0);
  CHECK(r.exit_code == 130);
  CHECK(ms < 6000);
  CHECK(r.err.find("load interrupted") != std::string::npos);
  REQUIRE_FALSE(r.out.empty());
  auto doc = nlohmann::json::parse(r.out);
  const auto& t = doc.at("targets").at(0);
  CHECK(t.at("error") == probe::probe_interrupted_error);
  const auto& load = t.at("load");
  CHECK(load.at("interrupted") == true);
  // The TLS 1.3 run was under way: its phases are planned, none ran.
  REQUIRE(load.at("phases").size() >= 1);
  for (const auto& p : load.at("phases")) {
    CHECK(p.at("state") == "not_run_interrupted");
    CHECK(p.at("connections") == 0);
    CHECK(p.at("measured") == false);
  }
}

TEST_CASE("Ctrl-C between phases: the phases after it are reported as not run") {
  site s(false, "ssl_session_cache shared:S:1m;");
  auto probed = probe_port(s.port, quick(3));
  REQUIRE_FALSE(probed.error);
  std::atomic<bool> stop{false};
  auto o = short_load();
  o.duration_s = 5;
  o.stop = &stop;
  std::vector<std::string> plan, started;
  o.on_plan = [&](const std::vector<std::string>& names) { plan = names; };
  // Ctrl-C lands as the second phase is about to start.
  o.on_phase = [&](const std::string& name) {
    started.push_back(name);
    if (started.size() == 2) stop.store(true);
  };
  auto t0 = std::chrono::steady_clock::now();
  auto l = probe::run_load(local_target(s.port), probed, o);
  double ms = ms_since(t0);
  CHECK(l.interrupted);
  // One phase of 5 s, then nothing: well under two phases.
  CHECK(ms < 5000 + 3000);
  using enum probe::load_phase_kind;
  using enum probe::load_phase_state;
  REQUIRE(plan == std::vector<std::string>{"full TLS 1.3", "TLS 1.3 PSK", "full TLS 1.2",
                                           "TLS 1.2 ticket", "TLS 1.2 session ID"});
  REQUIRE(l.phases.size() == plan.size());
  CHECK(l.phases[0].state == ran);
  CHECK(l.phases[0].connections > 0);
  CHECK(l.phases[1].kind == psk_tls13);
  CHECK(l.phases[1].state == interrupted);
  CHECK(l.phases[1].connections == 0);
  CHECK(probe::unmeasured(l.phases[1]));
  for (std::size_t i = 2; i < l.phases.size(); ++i) {
    CAPTURE(i);
    CHECK(l.phases[i].state == not_run_interrupted);
    CHECK(l.phases[i].connections == 0);
  }
  CHECK(l.prices.empty());
}

TEST_CASE("the server killed mid-load: its phase ends, every later phase says why it did not run") {
  site s(false, "ssl_session_cache shared:S:1m;");
  std::string target = "127.0.0.1:" + std::to_string(s.port);
  pid_t master = s.ngx->master_pid();
  auto workers = s.ngx->worker_pids();
  // The ordinary probe takes a fraction of a second; the first 6 s phase is under way at 2 s.
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    for (pid_t w : workers) ::kill(w, SIGKILL);
    ::kill(master, SIGKILL);
  });
  auto t0 = std::chrono::steady_clock::now();
  int rc = -1;
  std::string err;
  auto j = ngxtls_json({"probe", target, "--sni", "localhost", "-n", "3", "--no-ocsp", "--load",
                        "--duration", "6", "-c", "2", "--timeout", "1000"},
                       &rc, &err);
  double ms = ms_since(t0);
  killer.join();
  CHECK(rc == 3);
  CHECK(err.find("could not be measured") != std::string::npos);
  // The phase stops about 1 s after the kill; each later phase costs one refused handshake.
  CHECK(ms < 2000 + 1000 + 3000);
  const auto& load = j.at("targets").at(0).at("load");
  CHECK(load.at("interrupted") == false);
  const auto& phases = load.at("phases");
  std::vector<std::string> names;
  for (const auto& p : phases) names.push_back(p.at("phase").get<std::string>());
  REQUIRE(names == std::vector<std::string>{"full_tls13", "psk_tls13", "full_tls12", "ticket_tls12",
                                            "session_id_tls12"});
  const auto& first = phases.at(0);
  CHECK(first.at("state") == "server_stopped");
  CHECK(first.at("measured") == false);
  CHECK(first.at("connections").get<int>() > 0);
  CHECK(first.at("failures").get<int>() > 0);
  CHECK(first.at("last_error").get<std::string>().find("refused") != std::string::npos);
  // The figures cover the time the server answered: about 2 s less the probe's share.
  CHECK(first.at("elapsed_s").get<double>() < 2.5);
  for (std::size_t i = 1; i < phases.size(); ++i) {
    CAPTURE(i);
    CHECK(phases.at(i).at("state") == "not_run_unanswered");
    CHECK(phases.at(i).at("failures") == 1);
    CHECK(phases.at(i).at("last_error").get<std::string>().find("refused") != std::string::npos);
  }
  CHECK(load.at("prices").empty());
}

namespace {

// Sockets in TIME_WAIT whose peer is 127.0.0.1:`port` (/proc/net/tcp: state 06; the remote
// address as hex IP:port, the IP in the kernel's byte order).
int time_wait_to(int port) {
  std::istringstream lines(read_file("/proc/net/tcp"));
  std::string line;
  std::getline(lines, line);  // header
  char want[16];
  std::snprintf(want, sizeof want, "0100007F:%04X", port);
  int n = 0;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string slot, local, remote, state;
    f >> slot >> local >> remote >> state;
    if (remote == want && state == "06") ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("a load's connections end with a reset: no TIME_WAIT socket is left per connection") {
  site s(false, "ssl_session_cache shared:S:1m;");
  auto probed = probe_port(s.port, quick(3));
  REQUIRE_FALSE(probed.error);
  // The ordinary probe's connections close with close_notify and FIN: they are in TIME_WAIT.
  int before = time_wait_to(s.port);
  auto l = probe::run_load(local_target(s.port), probed, short_load());
  int connections = 0;
  for (const auto& p : l.phases) connections += p.connections;
  int after = time_wait_to(s.port);
  MESSAGE(connections << " connections; TIME_WAIT to the server's port: " << before << " before, "
                      << after << " after");
  // Hundreds of connections per phase; only the handful of single handshakes before the phases
  // (session and key-type look-ups) close gracefully.
  CHECK(connections > 500);
  CHECK(after - before <= 10);
  // Resumed phases still resume: ending with a reset does not spoil the offered session.
  for (const auto& p : l.phases)
    if (probe::is_resumed(p.kind)) CHECK(p.resumed == p.connections);
}

TEST_CASE("load settings without --load, and --load out of bounds, are usage errors") {
  for (const auto& extra : std::vector<std::vector<std::string>>{{"--duration", "5"},
                                                                 {"--request"},
                                                                 {"--load", "--duration", "121"},
                                                                 {"--load", "--duration", "0"},
                                                                 {"--load", "--max-rate", "0"},
                                                                 {"--load", "127.0.0.2:1"}}) {
    std::vector<std::string> argv{ngxtls_binary(), "probe", "127.0.0.1:1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = run(argv, "", 20);
    CAPTURE(extra);
    CHECK(r.exit_code == 2);
  }
}
