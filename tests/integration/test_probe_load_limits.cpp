// probe --load through the real binary against real nginx: SIGTERM writes the partial report
// as SIGINT does (exit 143, the shell's 128 + 15), and --max-rate caps the launches of a phase
// for every accepted rate, counted where nginx logs them.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "probe_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

// One nginx with TLS 1.2 and 1.3, a shared session cache (so every resumed phase runs) and an
// access log: with `probe --no-http --load --request` only the load's connections send a
// request, so the log has one line per load connection that got its answer.
struct logged_site {
  temp_dir dir;
  tls::pki_paths pki = tls::make_pki((dir.path() / "pki").string(), {});
  int port = free_port();
  std::filesystem::path log = dir.path() / "access.log";
  std::unique_ptr<nginx_instance> ngx;
  logged_site() {
    nginx_options no;
    no.wait_ports = {port};
    ngx = std::make_unique<nginx_instance>(
        nginx_conf(
            1, tls_server(port, pki,
                          "ssl_session_cache shared:S:1m;\n  access_log " + log.string() + ";")),
        no);
  }
  std::string target() const { return "127.0.0.1:" + std::to_string(port); }
  // Lines nginx wrote to the access log (it writes each before it closes the connection).
  int logged_requests() const {
    std::ifstream f(log);
    int n = 0;
    std::string line;
    while (std::getline(f, line)) n += line.empty() ? 0 : 1;
    return n;
  }
};

}  // namespace

TEST_CASE("SIGTERM during a load writes the partial report and exits 143") {
  logged_site s;
  auto t0 = std::chrono::steady_clock::now();
  // SIGTERM after 3 s (timeout's default signal): the ordinary probe is over, a 60 s phase has
  // begun.
  auto r =
      run({"timeout", "--preserve-status", "3", ngxtls_binary(), "probe", s.target(), "--sni",
           "localhost", "-n", "3", "--no-ocsp", "--load", "--duration", "60", "--format", "json"},
          "", 60);
  const double ms = ms_since(t0);
  CHECK(r.exit_code == 143);
  CHECK(ms < 8000);
  CHECK(r.err.find("load interrupted (SIGTERM): the report is partial") != std::string::npos);
  REQUIRE_FALSE(r.out.empty());
  auto doc = nlohmann::json::parse(r.out);
  const auto& load = doc.at("targets").at(0).at("load");
  CHECK(load.at("interrupted") == true);
  REQUIRE(load.at("phases").size() >= 2);
  // The first phase was cut short by the signal, every later one did not run.
  CHECK(load.at("phases").at(0).at("state") == "interrupted");
  for (std::size_t i = 1; i < load.at("phases").size(); ++i)
    CHECK(load.at("phases").at(i).at("state") == "not_run_interrupted");
}

TEST_CASE("SIGTERM during the probe before the load writes the partial report and exits 143") {
  logged_site s;
  // 200,000 attempts one at a time keep the ordinary probe busy far beyond the signal at 1 s.
  auto r = run({"timeout", "--preserve-status", "-s", "TERM", "1", ngxtls_binary(), "probe",
                s.target(), "--sni", "localhost", "-n", "200000", "-c", "1", "--no-ocsp", "--load",
                "--format", "prometheus"},
               "", 60);
  CHECK(r.exit_code == 143);
  CHECK(r.err.find("load interrupted (SIGTERM)") != std::string::npos);
  // The partial report is the Prometheus text with the target in it.
  CHECK(r.out.find("ngxtls_probe_success{target=\"" + s.target() + "\"} 0") != std::string::npos);
}

TEST_CASE(
    "--max-rate caps every phase at floor(duration * rate) + 1 launches for any accepted rate") {
  logged_site s;
  struct rate_case {
    const char* rate;
    int duration_s;
  };
  // 1e-12/s: 1 / rate overflowed the pacing interval and removed the cap; 0.001/s: each client
  // thread started one connection at once. 2.5/s over 2 s: 5 intervals, 6 launches at most.
  for (const rate_case c : {rate_case{"1e-12", 1}, rate_case{"0.001", 2}, rate_case{"2.5", 2}}) {
    CAPTURE(c.rate);
    const int before = s.logged_requests();
    auto r =
        run({ngxtls_binary(), "probe", s.target(), "--sni", "localhost", "-n", "2", "--no-ocsp",
             "--no-http", "--load", "--request", "--duration", std::to_string(c.duration_s),
             "--max-rate", c.rate, "-c", "8", "--format", "json"},
            "", 120);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find(std::string("at most ") + c.rate + " connections/s") != std::string::npos);
    const auto doc = nlohmann::json::parse(r.out);
    const auto& phases = doc.at("targets").at(0).at("load").at("phases");
    REQUIRE(phases.size() >= 4);
    const int cap = static_cast<int>(std::floor(c.duration_s * std::stod(c.rate))) + 1;
    int launched = 0;
    for (const auto& p : phases) {
      CAPTURE(p.at("phase").get<std::string>());
      const int n = p.at("connections").get<int>() + p.at("failures").get<int>();
      CHECK(n >= 1);
      CHECK(n <= cap);
      launched += n;
    }
    // What nginx answered: the load's requests only (--no-http keeps the probe's out).
    const int logged = s.logged_requests() - before;
    CHECK(logged >= static_cast<int>(phases.size()));
    CHECK(logged <= cap * static_cast<int>(phases.size()));
    CHECK(logged == launched);
  }
}
