// Where a connection's time goes (the timings module) against the real nginx: TCP connect, TLS
// handshake and request to first byte, for full and resumed handshakes, per run, in the library
// result, the JSON record, the Prometheus text and the text report.
#include <doctest/doctest.h>

#include "probe_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

struct site {
  temp_dir dir;
  tls::pki_paths pki = tls::make_pki((dir.path() / "pki").string(), {});
  int port = free_port();
  std::unique_ptr<nginx_instance> ngx;
  site() {
    nginx_options no;
    no.wait_ports = {port};
    ngx = std::make_unique<nginx_instance>(nginx_conf(2, tls_server(port, pki, "")), no);
  }
};

// Every part of one kind of connection is timed: positive, the connect shorter than the whole,
// the handshake a share of the whole in (0, 1].
void check_split(const probe::time_split& s, std::size_t connections, bool http) {
  CHECK(s.connect_ms.count == connections);
  CHECK(s.tls_handshake_ms.count == connections);
  CHECK(s.total_ms.count == connections);
  CHECK(s.first_byte_ms.count == (http ? connections : 0));
  if (connections == 0) {
    CHECK_FALSE(s.handshake_share);
    return;
  }
  CHECK(s.connect_ms.median > 0);
  CHECK(s.tls_handshake_ms.median > 0);
  CHECK(s.total_ms.median > 0);
  CHECK(s.connect_ms.median <= s.connect_ms.p90);
  CHECK(s.connect_ms.median < s.total_ms.median);
  CHECK(s.tls_handshake_ms.median < s.total_ms.median);
  if (http) CHECK(s.first_byte_ms.median > 0);
  REQUIRE(s.handshake_share);
  CHECK(*s.handshake_share > 0);
  CHECK(*s.handshake_share <= 1);
}

void check_runs(const probe::target_result& r, bool http) {
  REQUIRE_FALSE(r.error);
  REQUIRE(r.protocols.size() == 3);
  for (const auto& run : r.protocols) {
    CAPTURE(probe::run_label(run));
    REQUIRE_FALSE(run.error);
    // Each connection of the run is either a full handshake or a resumed one.
    check_split(run.resumed_time, static_cast<std::size_t>(run.resumed), http);
    check_split(run.full_time, static_cast<std::size_t>(run.connections - run.resumed), http);
  }
  // nginx's defaults resume TLS 1.3 and TLS 1.2 tickets (test_probe_nginx): resumed
  // handshakes are timed there, and session IDs (no session cache) never resume.
  CHECK(run_of(r, "TLSv1.3", "ticket").resumed_time.tls_handshake_ms.count == 10);
  CHECK(run_of(r, "TLSv1.2", "ticket").resumed_time.tls_handshake_ms.count == 10);
  CHECK(run_of(r, "TLSv1.2", "session_id").resumed_time.tls_handshake_ms.count == 0);
}

}  // namespace

TEST_CASE(
    "every probe connection is timed: connect, TLS handshake and first byte, full and resumed") {
  site s;
  check_runs(probe_port(s.port, quick(10)), true);
}

TEST_CASE("with --no-http a connection's time ends with its handshake and has no first byte") {
  site s;
  auto o = quick(10);
  o.http = false;
  auto r = probe_port(s.port, o);
  check_runs(r, false);
  for (const auto& run : r.protocols) {
    CAPTURE(probe::run_label(run));
    // The whole is connect + handshake: the handshake's share is what the connect leaves.
    CHECK(run.full_time.total_ms.median >= run.full_time.tls_handshake_ms.median);
  }
}

TEST_CASE("the timings are in the JSON record, the Prometheus text and the text report") {
  site s;
  const std::string target = "127.0.0.1:" + std::to_string(s.port);
  int rc = -1;
  auto j = ngxtls_json({"probe", target, "--sni", "localhost", "-n", "5", "--no-ocsp"}, &rc);
  REQUIRE(rc == 0);
  for (const auto& p : j.at("targets").at(0).at("protocols")) {
    CAPTURE(p.at("protocol").get<std::string>());
    CAPTURE(p.at("mechanism").get<std::string>());
    const auto& full = p.at("timings").at("full");
    CHECK(full.at("connect_ms").at("count").get<int>() ==
          p.at("connections").get<int>() - p.at("resumed").get<int>());
    CHECK(full.at("connect_ms").at("median").get<double>() > 0);
    CHECK(full.at("tls_handshake_ms").at("p90").get<double>() > 0);
    CHECK(full.at("first_byte_ms").at("median").get<double>() > 0);
    CHECK(full.at("total_ms").at("median").get<double>() > 0);
    const double share = full.at("handshake_share").get<double>();
    CHECK(share > 0);
    CHECK(share <= 1);
    const auto& resumed = p.at("timings").at("resumed");
    CHECK(resumed.at("tls_handshake_ms").at("count").get<int>() == p.at("resumed").get<int>());
    if (p.at("resumed").get<int>() == 0) CHECK(resumed.at("handshake_share").is_null());
  }

  auto prom = run({ngxtls_binary(), "probe", target, "--sni", "localhost", "-n", "5", "--no-ocsp",
                   "--format", "prometheus"},
                  "", 60);
  REQUIRE(prom.exit_code == 0);
  const std::string l =
      "target=\"" + target + "\",protocol=\"TLSv1.3\",mechanism=\"ticket\",mode=\"same_session\"";
  for (const char* family :
       {"ngxtls_connect_seconds", "ngxtls_tls_handshake_seconds", "ngxtls_first_byte_seconds"}) {
    CAPTURE(family);
    CHECK(prom.out.find("# TYPE " + std::string(family) + " gauge\n") != std::string::npos);
    for (const char* kind : {"full", "resumed"})
      for (const char* stat : {"median", "p90"})
        CHECK(prom.out.find(std::string(family) + "{" + l + ",kind=\"" + kind + "\",stat=\"" +
                            stat + "\"} ") != std::string::npos);
  }
  CHECK(prom.out.find("ngxtls_handshake_share_ratio{" + l + ",kind=\"full\"} ") !=
        std::string::npos);
  CHECK(prom.out.find("ngxtls_handshake_share_ratio{" + l + ",kind=\"resumed\"} ") !=
        std::string::npos);

  auto text =
      run({ngxtls_binary(), "probe", target, "--sni", "localhost", "-n", "5", "--no-ocsp"}, "", 60);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("    full (") != std::string::npos);
  CHECK(text.out.find("    resumed (5): connect ") != std::string::npos);
  CHECK(text.out.find("% of the time\n") != std::string::npos);
}
