// OCSP staples as the prober sees them on nginx 1.22 (DESIGN fact 9, cases C05 and C06).
#include <doctest/doctest.h>

#include "probe_util.hpp"
#include "support/ocsp_responder.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

TEST_CASE("ssl_stapling_file staples from the first connection") {
  temp_dir dir;
  tls::pki_options po;
  po.ocsp_url = "http://127.0.0.1:9/";  // never asked: the file is the staple
  auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  std::string der = (dir.path() / "staple.der").string();
  tls::write_ocsp_response(pki, der, 86400);
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(2, tls_server(port, pki, "ssl_stapling on; ssl_stapling_file " + der + ";")), no);
  auto r = probe_port(port, quick(4, true));
  REQUIRE_FALSE(r.error);
  CHECK(r.ocsp.status == "working");
  CHECK(r.ocsp.first_connection_stapled);
  CHECK(r.ocsp.stapled == r.ocsp.connections);
  CHECK(r.ocsp.response_status == "successful");
  CHECK(r.ocsp.cert_status == "good");
  REQUIRE(r.ocsp.next_update_in_s);
  CHECK(*r.ocsp.next_update_in_s > 86400 - 120);
  CHECK(*r.ocsp.next_update_in_s <= 86400);
}

TEST_CASE("stapling from a local OCSP responder: none on the first connection, then working") {
  temp_dir dir;
  int ocsp_port = free_port();
  tls::pki_options po;
  po.ocsp_url = ocsp_responder::url_for(ocsp_port);
  auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  ocsp_responder responder(pki, ocsp_port);
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  // One worker: its first connection starts the fetch and carries no staple (case C06).
  nginx_instance ngx(nginx_conf(1, tls_server(port, pki, "ssl_stapling on;")), no);
  auto o = quick(4, true);
  o.tls12 = false;
  auto r = probe_port(port, o);
  INFO(responder.log());
  INFO(ngx.error_log());
  REQUIRE_FALSE(r.error);
  REQUIRE(r.certificate);
  CHECK(r.certificate->ocsp_url_present);
  CHECK_FALSE(r.ocsp.first_connection_stapled);
  CHECK(r.ocsp.stapled > 0);
  CHECK(r.ocsp.status == "working");
  CHECK(r.ocsp.cert_status == "good");
  CHECK(report_verdicts_for_test(r).find("OCSP stapling works") != std::string::npos);
}

TEST_CASE("a certificate without an OCSP URL: stapling reported as not applicable, without waiting") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(1, tls_server(port, pki, "ssl_stapling on;")), no);
  auto t0 = std::chrono::steady_clock::now();
  auto r = probe_port(port, quick(2, true));
  REQUIRE_FALSE(r.error);
  CHECK(r.ocsp.status == "not_applicable");
  CHECK(r.ocsp.stapled == 0);
  CHECK(ms_since(t0) < 1500);
  CHECK(report_verdicts_for_test(r).find("not applicable") != std::string::npos);
}

TEST_CASE("a responder that never answers: staple absent only after retries over at least 2 s") {
  temp_dir dir;
  tls::pki_options po;
  po.ocsp_url = "http://127.0.0.1:" + std::to_string(free_port()) + "/";  // nothing listens there
  auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(1, tls_server(port, pki, "ssl_stapling on;")), no);
  auto o = quick(2, true);
  o.tls12 = false;
  auto r = probe_port(port, o);
  REQUIRE_FALSE(r.error);
  CHECK(r.ocsp.status == "absent");
  CHECK(r.ocsp.stapled == 0);
  CHECK(r.ocsp.connections >= 4);
  CHECK(r.ocsp.waited_ms >= 2000);
}
