// `ngxtls probe` as a user runs it: sessions shared with openssl s_client in both directions,
// the JSON record of docs/probe-json.md, and the Prometheus text format.
#include <doctest/doctest.h>

#include <regex>
#include <sstream>

#include "probe_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

struct local_nginx {
  temp_dir dir;
  tls::pki_paths pki = tls::make_pki((dir.path() / "pki").string(), {});
  int port = free_port();
  std::unique_ptr<nginx_instance> ngx;
  local_nginx() {
    nginx_options no;
    no.wait_ports = {port};
    ngx = std::make_unique<nginx_instance>(nginx_conf(2, tls_server(port, pki, "")), no);
  }
  std::string target() const { return "127.0.0.1:" + std::to_string(port); }
};

}  // namespace

TEST_CASE("a session saved with --sess-out resumes with openssl s_client -sess_in") {
  local_nginx n;
  for (const std::string proto : {"1_3", "1_2"}) {
    CAPTURE(proto);
    std::string sess = (n.dir.path() / ("ngxtls" + proto + ".pem")).string();
    std::string flag = proto == "1_3" ? "--tls1.3" : "--tls1.2";
    int rc = -1;
    ngxtls_json({"probe", n.target(), "--sni", "localhost", flag, "-n", "1", "--no-ocsp",
                 "--sess-out", sess},
                &rc);
    REQUIRE(rc == 0);
    auto r = run({"openssl", "s_client", "-connect", n.target(), "-servername", "localhost",
                  "-tls" + proto, "-sess_in", sess},
                 "", 20);
    CHECK(r.out.find("\nReused, TLSv" + std::string(proto == "1_3" ? "1.3" : "1.2")) !=
          std::string::npos);
  }
}

TEST_CASE("a session saved by openssl s_client -sess_out resumes with ngxtls --sess-in") {
  local_nginx n;
  for (const std::string proto : {"1_3", "1_2"}) {
    CAPTURE(proto);
    std::string sess = (n.dir.path() / ("s_client" + proto + ".pem")).string();
    // TLS 1.3 tickets come after the handshake: s_client must read a response before it
    // quits, or it saves no session at all (docs/nginx-facts.md#handshake-costs).
    auto r = run({"openssl", "s_client", "-connect", n.target(), "-servername", "localhost",
                  "-tls" + proto, "-sess_out", sess, "-ign_eof"},
                 "HEAD / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", 20);
    REQUIRE(r.exit_code == 0);
    auto j = ngxtls_json(
        {"probe", n.target(), "--sni", "localhost", "-n", "5", "--no-ocsp", "--sess-in", sess});
    const auto& runs = j.at("targets").at(0).at("protocols");
    REQUIRE(runs.size() == 1);
    CHECK(runs.at(0).at("protocol") == (proto == "1_3" ? "TLSv1.3" : "TLSv1.2"));
    CHECK(runs.at(0).at("session_source") == "sess_in");
    CHECK(runs.at(0).at("resumed") == 5);
  }
}

TEST_CASE("the JSON record carries the documented fields") {
  local_nginx n;
  int rc = -1;
  auto j = ngxtls_json({"probe", "https://localhost:" + std::to_string(n.port) + "/", "--connect",
                        "127.0.0.1:" + std::to_string(n.port), "-n", "3"},
                       &rc);
  CHECK(rc == 0);
  REQUIRE(j.at("targets").size() == 1);
  const auto& t = j.at("targets").at(0);
  CHECK(t.at("target") == "https://localhost:" + std::to_string(n.port) + "/");
  CHECK(t.at("address") == "127.0.0.1:" + std::to_string(n.port));
  CHECK(t.at("sni") == "localhost");
  CHECK(t.at("error").is_null());
  REQUIRE(t.at("protocols").size() == 3);
  for (const auto& p : t.at("protocols")) {
    for (const char* key :
         {"protocol", "mechanism", "mode", "attempts", "resumed", "rate", "ticket_key_names",
          "stateful_tickets", "lifetime_hint_s", "tickets_per_connection", "max_early_data",
          "full_handshake_ms", "resumed_handshake_ms"})
      CHECK_MESSAGE(p.contains(key), key);
    CHECK(p.at("mode") == "same_session");
    CHECK(p.at("full_handshake_ms").contains("median"));
    CHECK(p.at("full_handshake_ms").contains("p90"));
    CHECK(p.at("rate").get<double>() >= 0.0);
    CHECK(p.at("rate").get<double>() <= 1.0);
    // The test nginx answers HEAD / with 200 on every attempt.
    CHECK(p.at("http_statuses") == nlohmann::json{{"200", p.at("attempts")}});
  }
  CHECK(t.at("protocols").at(0).at("protocol") == "TLSv1.3");
  CHECK(t.at("protocols").at(0).at("mechanism") == "ticket");
  CHECK(t.at("protocols").at(2).at("mechanism") == "session_id");
  CHECK(t.at("ocsp").at("status") == "not_applicable");
  CHECK(t.at("certificate").at("subject") == "CN=localhost");
  CHECK(t.at("certificate").at("ocsp_url_present") == false);
}

TEST_CASE("--format prometheus writes gauges with labels and no timestamps") {
  local_nginx n;
  auto r = run({ngxtls_binary(), "probe", n.target(), "--sni", "localhost", "-n", "2", "--format",
                "prometheus"},
               "", 60);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("# TYPE ngxtls_resumption_ratio gauge\n") != std::string::npos);
  std::string label = "target=\"" + n.target() + "\"";
  CHECK(r.out.find("ngxtls_probe_success{" + label + "} 1\n") != std::string::npos);
  CHECK(r.out.find("ngxtls_resumption_ratio{" + label +
                   ",protocol=\"TLSv1.3\",mechanism=\"ticket\",mode=\"same_session\"} 1\n") !=
        std::string::npos);
  CHECK(r.out.find("ngxtls_ticket_key_names{" + label +
                   ",protocol=\"TLSv1.3\",mechanism=\"ticket\",mode=\"same_session\"} 1\n") !=
        std::string::npos);
  // Every sample line: name{labels} value, nothing after the value (no timestamp).
  static const std::regex sample(R"(^[a-z_]+\{[^}]*\} -?[0-9.e+-]+$)");
  std::istringstream lines(r.out);
  std::string line;
  int samples = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# ", 0) == 0) continue;
    CAPTURE(line);
    CHECK(std::regex_match(line, sample));
    ++samples;
  }
  CHECK(samples > 10);
}

TEST_CASE(
    "text output puts verdict lines before numbers, --fresh-tickets is reported as the mode") {
  local_nginx n;
  auto r = run({ngxtls_binary(), "probe", n.target(), "--sni", "localhost", "-n", "4", "--tls1.3",
                "--fresh-tickets"},
               "", 60);
  CHECK(r.exit_code == 0);
  auto verdict = r.out.find("TLS 1.3 resumption works: 4 of 4 attempts resumed");
  auto numbers = r.out.find("[fresh_tickets]: 4/4 resumed");
  CHECK(verdict != std::string::npos);
  CHECK(numbers != std::string::npos);
  CHECK(verdict < numbers);
  CHECK(r.err.empty());  // no progress bar when stderr is not a TTY
}

TEST_CASE("usage errors exit 2, --sess-in with a missing file exits 2") {
  CHECK(run({ngxtls_binary(), "probe"}).exit_code == 2);
  CHECK(run({ngxtls_binary(), "probe", "host:99999"}).exit_code == 2);
  CHECK(run({ngxtls_binary(), "probe", "127.0.0.1:1", "--sess-in", "/nonexistent/sess.pem"})
            .exit_code == 2);
}

TEST_CASE(
    "--targets FILE probes several targets in parallel, one unreachable target makes exit code 3") {
  local_nginx n;
  int closed = free_port();
  auto list = n.dir.write(
      "targets.txt", "# fleet\n" + n.target() + "\n\n127.0.0.1:" + std::to_string(closed) + "\n");
  int rc = -1;
  std::string err;
  auto j = ngxtls_json({"probe", "--targets", list.string(), "--sni", "localhost", "-n", "3",
                        "--no-ocsp", "--parallel", "2"},
                       &rc, &err);
  CHECK(rc == 3);
  REQUIRE(j.at("targets").size() == 2);
  CHECK(j.at("targets").at(0).at("error").is_null());
  CHECK(j.at("targets").at(0).at("protocols").at(0).at("resumed") == 3);
  CHECK(j.at("targets").at(1).at("error").is_string());
  CHECK(err.find("cannot probe 127.0.0.1:" + std::to_string(closed)) != std::string::npos);
}
