// QUIC beyond the probe itself, against nginx built with --with-http_v3_module (1.30.x Debian,
// 1.26.3 built here): probe --load's full and resumed QUIC phases and their price, the QUIC
// figures `serve` exports when a module asks for them (checked with the real promtool), and
// probe --quic's exit status when QUIC fails while TCP works. Loads are 1 s a phase.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <iostream>
#include <set>
#include <thread>

#include "probe/load.hpp"
#include "probe_util.hpp"
#include "serve_util.hpp"
#include "support/nginx_versions.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

// The matrix's nginx of `slot` when it has HTTP/3; else says why the case is skipped.
std::optional<nginx_version_entry> quic_nginx(const char* slot) {
  auto v = nginx_version_for(slot);
  if (v.status != "ok" || !has_http_v3(v.binary)) {
    std::cout << "NGXTLS_SKIP: nginx " << v.version << " with http_v3 not installed here ("
              << v.note << ")" << std::endl;
    return std::nullopt;
  }
  std::cout << "measured on nginx " << v.version << " (" << v.binary << ")" << std::endl;
  return v;
}

// One nginx of `binary` with a QUIC server per `extra` (each on a port of its own).
struct quic_site {
  temp_dir dir;
  tls::pki_paths pki;
  std::vector<int> ports;
  std::unique_ptr<nginx_instance> ngx;
  quic_site(const std::string& binary, const std::vector<std::string>& extra) {
    pki = tls::make_pki((dir.path() / "pki").string());
    std::string body;
    for (const auto& e : extra) {
      ports.push_back(free_port());
      body += quic_server(ports.back(), pki, e);
    }
    nginx_options no;
    no.binary = binary;
    no.wait_ports = ports;
    ngx = std::make_unique<nginx_instance>(nginx_conf(1, body), no);
  }
  std::string target(std::size_t i) const { return "127.0.0.1:" + std::to_string(ports.at(i)); }
};

const nlohmann::json& phase_json(const nlohmann::json& load, const std::string& name) {
  for (const auto& p : load.at("phases"))
    if (p.at("phase") == name) return p;
  throw std::runtime_error("no load phase " + name);
}

std::set<std::string> phase_names(const nlohmann::json& load) {
  std::set<std::string> out;
  for (const auto& p : load.at("phases")) out.insert(p.at("phase").get<std::string>());
  return out;
}

// A QUIC phase that ran its second: every connection completed, none failed.
void check_quic_phase(const nlohmann::json& p, bool resumed, bool request) {
  INFO("phase: " << p.dump());
  CHECK(p.at("state") == "ran");
  CHECK(p.at("measured") == true);
  CHECK(p.at("certificate_key") == "any");
  CHECK(p.at("failures") == 0);
  const int n = p.at("connections").get<int>();
  CHECK(n > 10);  // some hundreds on loopback: 10 would be 100 ms a handshake
  CHECK(p.at("elapsed_s").get<double>() == doctest::Approx(1.0).epsilon(0.2));
  CHECK(p.at("connections_per_s").get<double>() ==
        doctest::Approx(n / p.at("elapsed_s").get<double>()));
  CHECK(p.at("resumed") == (resumed ? n : 0));
  CHECK(p.at("connect_ms").at("count") == 0);  // QUIC has no connect of its own
  CHECK(p.at("handshake_ms").at("count") == n);
  CHECK(p.at("handshake_ms").at("median").get<double>() <=
        p.at("handshake_ms").at("p90").get<double>());
  CHECK(p.at("first_byte_ms").at("count") == (request ? n : 0));
  CHECK(p.at("client_cpu_share").get<double>() > 0);
  CHECK(p.at("client_cpu_share").get<double>() <= 1);
}

void quic_load_on(const char* slot) {
  auto v = quic_nginx(slot);
  if (!v) return;
  quic_site s(v->binary, {"", "ssl_session_tickets off;"});
  int rc = -1;
  std::string err;
  auto j = ngxtls_json({"probe", s.target(0), "--sni", "localhost", "--quic", "--tls1.3", "-n", "3",
                        "--no-ocsp", "--load", "--duration", "1", "-c", "4"},
                       &rc, &err);
  INFO("stderr: " << err);
  CHECK(rc == 0);
  CHECK(err.find("full QUIC; QUIC resumed") != std::string::npos);
  const auto& load = j.at("targets").at(0).at("load");
  INFO("load: " << load.dump());
  CHECK(load.at("quic_concurrency") == 4);
  CHECK(phase_names(load) ==
        std::set<std::string>{"full_tls13", "psk_tls13", "full_quic", "resumed_quic"});
  check_quic_phase(phase_json(load, "full_quic"), false, false);
  check_quic_phase(phase_json(load, "resumed_quic"), true, false);
  // Priced as TCP: the QUIC probe resumed every attempt, so today's capacity is R, and every
  // resumed connection resumed, so R is the resumed phase's own rate.
  const double f = phase_json(load, "full_quic").at("connections_per_s").get<double>();
  const double r = phase_json(load, "resumed_quic").at("connections_per_s").get<double>();
  std::optional<nlohmann::json> price;
  for (const auto& p : load.at("prices"))
    if (p.at("full_phase") == "full_quic") price = p;
  REQUIRE(price);
  CHECK(price->at("resumed_phase") == "resumed_quic");
  CHECK(price->at("resumption_rate") == 1.0);
  CHECK(price->at("full_per_s").get<double>() == doctest::Approx(f));
  CHECK(price->at("resumed_per_s").get<double>() == doctest::Approx(r));
  CHECK(price->at("today_per_s").get<double>() == doctest::Approx(r));
  CHECK(price->at("gain").get<double>() == doctest::Approx(0.0));
  CHECK(load.at("prices").size() == 2);  // TLS 1.3 and QUIC

  // No resumption over QUIC (tickets off, no cache): no resumed QUIC phase, and with --request
  // every QUIC connection got its HTTP/3 response.
  j = ngxtls_json({"probe", s.target(1), "--sni", "localhost", "--quic", "--tls1.3", "-n", "3",
                   "--no-ocsp", "--load", "--duration", "1", "-c", "2", "--request"},
                  &rc, &err);
  CHECK(rc == 0);
  const auto& l2 = j.at("targets").at(0).at("load");
  INFO("load: " << l2.dump());
  CHECK(phase_names(l2) == std::set<std::string>{"full_tls13", "full_quic"});
  check_quic_phase(phase_json(l2, "full_quic"), false, true);
  CHECK(l2.at("prices").empty());
}

// A UDP socket bound to `port` on loopback that reads nothing and answers nothing.
struct silent_udp {
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  explicit silent_udp(int port) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(static_cast<std::uint16_t>(port));
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&in), sizeof in) != 0)
      throw std::runtime_error("cannot bind UDP port " + std::to_string(port));
  }
  ~silent_udp() { ::close(fd); }
};

}  // namespace

TEST_CASE("probe --load with QUIC on nginx 1.30.x: full and resumed QUIC phases, priced") {
  quic_load_on("1.30");
}

TEST_CASE("probe --load with QUIC on nginx 1.26.3: full and resumed QUIC phases, priced") {
  quic_load_on("1.26");
}

TEST_CASE("a stop (Ctrl-C) ends a QUIC load phase at once, and the phases after it are not run") {
  auto v = quic_nginx("1.30");
  if (!v) return;
  quic_site s(v->binary, {""});
  auto o = quick(3);
  o.quic = probe::quic_mode::always;
  auto probed = probe_port(s.ports.at(0), o);
  REQUIRE(probed.quic);
  REQUIRE(probed.quic->resumed > 0);
  probed.protocols.clear();  // only the QUIC phases are planned
  probe::load_options lo;
  lo.duration_s = 60;
  lo.concurrency = 4;
  lo.timeout_ms = 5000;
  std::atomic<bool> stop{false};
  lo.stop = &stop;
  auto t = probe::parse_target(s.target(0), std::string("localhost"));
  auto t0 = std::chrono::steady_clock::now();
  std::jthread ctrl_c([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    stop = true;
  });
  auto l = probe::run_load(t, probed, lo);
  CHECK(ms_since(t0) < 3000);  // 1.5 s, then at most 100 ms per connection in flight
  CHECK(l.interrupted);
  REQUIRE(l.phases.size() == 2);
  CHECK(l.phases[0].kind == probe::load_phase_kind::full_quic);
  CHECK(l.phases[0].state == probe::load_phase_state::interrupted);
  CHECK(l.phases[0].connections > 0);
  CHECK(l.phases[0].failures == 0);  // the connections Ctrl-C ended are not the server's failures
  CHECK(l.phases[0].elapsed_s == doctest::Approx(1.5).epsilon(0.3));
  CHECK(l.phases[1].kind == probe::load_phase_kind::resumed_quic);
  CHECK(l.phases[1].state == probe::load_phase_state::not_run_interrupted);
}

TEST_CASE("serve exports the QUIC figures a module asks for, and promtool check metrics passes") {
  if (run({"sh", "-c", "command -v promtool"}, "", 10).exit_code != 0) {
    skip_test("promtool is not installed (Debian package prometheus; scripts/install-deps.sh)");
    return;
  }
  auto v = quic_nginx("1.30");
  if (!v) return;
  quic_site s(v->binary, {"quic_retry on;", "ssl_early_data on;"});
  temp_dir dir;
  serve_process srv{dir, "allow = [\"" + s.target(0) + "\"]\n[modules.default]\nattempts = 3\n" +
                             "sni = \"localhost\"\n[modules.h3]\nattempts = 3\n" +
                             "sni = \"localhost\"\nquic = \"always\"\n"};
  auto plain = srv.probe(s.target(0));
  REQUIRE(plain);
  CHECK(plain->status == 200);
  // No Alt-Svc on this server: the default module probes no QUIC.
  CHECK(plain->body.find("ngxtls_quic_") == std::string::npos);
  auto h3 = srv.probe(s.target(0), "h3");
  REQUIRE(h3);
  CHECK(h3->status == 200);
  const std::string& m = h3->body;
  INFO("/probe?module=h3:\n" << m);
  auto check = run({"promtool", "check", "metrics"}, m, 60);
  CHECK(check.exit_code == 0);
  CHECK(check.out + check.err == "");
  CHECK(sample(m, "ngxtls_quic_probe_success") == 1);
  CHECK(sample(m, "ngxtls_quic_resumption_ratio") == 1);
  CHECK(sample(m, "ngxtls_quic_resumption_attempts") == 3);
  CHECK(sample(m, "ngxtls_quic_resumption_resumed") == 3);
  CHECK(sample(m, "ngxtls_quic_failed_connections") == 0);
  CHECK(sample(m, "ngxtls_quic_ticket_key_names") == 1);
  CHECK(sample(m, "ngxtls_quic_ticket_lifetime_seconds") == 300);  // ssl_session_timeout's
  CHECK(sample(m, "ngxtls_quic_retry_sent") == 1);
  CHECK(sample(m, "ngxtls_quic_new_token_received") == 1);
  CHECK(sample(m, "ngxtls_quic_new_token_validated") == 1);
  for (const char* kind : {"full", "resumed"})
    for (const char* stat : {"median", "p90"}) {
      const double t = sample(m, std::string("ngxtls_quic_handshake_seconds{kind=\"") + kind +
                                     "\",stat=\"" + stat + "\"}");
      CAPTURE(kind);
      CAPTURE(stat);
      CHECK(t > 0);
      CHECK(t < 1);
    }
  // serve sends no early data: no 0-RTT families.
  CHECK(m.find("ngxtls_quic_early_data") == std::string::npos);

  // The textfile with --early-data on the 0-RTT server: accepted, and the replay answered.
  auto r = run({ngxtls_binary(), "probe", s.target(1), "--sni", "localhost", "--quic",
                "--early-data", "-n", "3", "--no-ocsp", "--format", "prometheus"},
               "", 60);
  INFO("textfile:\n" << r.out << r.err);
  CHECK(r.exit_code == 0);
  auto text_check = run({"promtool", "check", "metrics"}, r.out, 60);
  CHECK(text_check.exit_code == 0);
  CHECK(text_check.out + text_check.err == "");
  const std::string l = "{target=\"" + s.target(1) + "\"}";
  CHECK(sample(r.out, "ngxtls_quic_early_data_accepted" + l) == 1);
  CHECK(sample(r.out, "ngxtls_quic_early_data_replay_answered" + l) == 1);
  CHECK(sample(r.out, "ngxtls_quic_retry_sent" + l) == 0);
  // No Retry to skip: whether the token validates is not measured.
  CHECK(std::isnan(sample(r.out, "ngxtls_quic_new_token_validated" + l)));

  // A module's quic value is checked where it is read.
  temp_dir bad;
  const auto path = bad.write("serve.toml", "[modules.h3]\nquic = \"yes\"\n");
  auto b = run({ngxtls_binary(), "serve", "--listen", "127.0.0.1:" + std::to_string(free_port()),
                "--config", path.string()},
               "", 20);
  CHECK(b.exit_code == 2);
  CHECK(b.err.find(path.string() + ":2:8") != std::string::npos);
  CHECK(b.err.find("\"quic\" must be \"always\", \"alt_svc\" or \"never\"") != std::string::npos);
}

TEST_CASE("probe --quic: QUIC failing while TCP works is exit 3 with the reason, as TCP's") {
  // The Debian nginx (no QUIC listener) on TCP; the same port on UDP closed, then silent.
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string());
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(1, tls_server(port, pki, "")), no);
  const std::string target = "127.0.0.1:" + std::to_string(port);
  auto probe = [&](const std::vector<std::string>& more) {
    std::vector<std::string> argv{ngxtls_binary(), "probe",     target, "--sni",
                                  "localhost",     "--tls1.3",  "-n",   "2",
                                  "--no-ocsp",     "--timeout", "1000"};
    argv.insert(argv.end(), more.begin(), more.end());
    return run(argv, "", 60);
  };
  auto tcp_only = probe({});
  CHECK(tcp_only.exit_code == 0);
  auto closed = probe({"--quic"});
  INFO("stderr: " << closed.err);
  CHECK(closed.exit_code == 3);
  CHECK(closed.err.find("ngxtls: error: cannot probe " + target + " over QUIC (UDP " + target +
                        "): nothing listens on that UDP port (ICMP port unreachable)") !=
        std::string::npos);
  CHECK(closed.err.find("error: cannot probe " + target + ": ") == std::string::npos);
  {
    silent_udp silent(port);
    auto r = probe({"--quic", "--format", "json"});
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("ngxtls: error: cannot probe " + target + " over QUIC (UDP " + target +
                     "): the QUIC handshake timed out after 1000 ms (no datagram from the "
                     "server)") != std::string::npos);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("targets").at(0).at("error").is_null());  // TCP was probed
    CHECK(j.at("targets").at(0).at("quic").at("error").is_string());
    auto text = probe({"--quic", "--format", "prometheus"});
    CHECK(text.exit_code == 3);
    CHECK(sample(text.out, "ngxtls_quic_probe_success{target=\"" + target + "\"}") == 0);
  }
  // --no-quic (and no Alt-Svc) never fails on QUIC.
  CHECK(probe({"--no-quic"}).exit_code == 0);
}
