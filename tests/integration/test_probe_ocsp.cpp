// OCSP staples as the prober sees them on nginx 1.22 (docs/nginx-facts.md#ocsp-stapling-quiet,
// cases C05 and C06).
#include <doctest/doctest.h>

#include <map>

#include "probe_util.hpp"
#include "support/ocsp_responder.hpp"
#include "support/ocsp_staples.hpp"
#include "support/server_process.hpp"

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
  nginx_instance ngx(
      nginx_conf(2, tls_server(port, pki, "ssl_stapling on; ssl_stapling_file " + der + ";")), no);
  auto r = probe_port(port, quick(4, true));
  REQUIRE_FALSE(r.error);
  CHECK(r.ocsp.status == probe::ocsp_status::working);
  CHECK(r.ocsp.first_connection_stapled);
  CHECK(r.ocsp.stapled == r.ocsp.connections);
  CHECK(r.ocsp.response_status == "successful");
  CHECK(r.ocsp.cert_status == "good");
  CHECK(r.ocsp.valid_staples == r.ocsp.stapled);
  CHECK(r.ocsp.staple_status == tls::staple_verdict::valid);
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
  CHECK(r.ocsp.status == probe::ocsp_status::working);
  CHECK(r.ocsp.cert_status == "good");
  CHECK(report_verdicts_for_test(r).find("OCSP stapling works") != std::string::npos);
}

TEST_CASE(
    "a certificate without an OCSP URL: stapling reported as not applicable, without waiting") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(1, tls_server(port, pki, "ssl_stapling on;")), no);
  auto t0 = std::chrono::steady_clock::now();
  auto r = probe_port(port, quick(2, true));
  REQUIRE_FALSE(r.error);
  CHECK(r.ocsp.status == probe::ocsp_status::not_applicable);
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
  CHECK(r.ocsp.status == probe::ocsp_status::absent);
  CHECK(r.ocsp.stapled == 0);
  CHECK(r.ocsp.connections >= 4);
  CHECK(r.ocsp.waited_ms >= 2000);
}

namespace {

// One nginx serving every kind of staple from ssl_stapling_file, one port per kind.
struct staple_farm {
  temp_dir dir;
  tls::pki_paths pki;
  std::map<staple_kind, int> ports;
  std::unique_ptr<nginx_instance> ngx;
  explicit staple_farm(const std::vector<staple_kind>& kinds, const std::string& chain = "") {
    tls::pki_options po;
    po.ocsp_url = "http://127.0.0.1:9/";  // never asked: the file is the staple
    pki = tls::make_pki((dir.path() / "pki").string(), po);
    auto served = pki;
    if (!chain.empty()) served.chain = chain == "leaf" ? pki.leaf_cert : chain;
    std::string servers;
    nginx_options no;
    for (auto k : kinds) {
      int port = free_port();
      ports[k] = port;
      no.wait_ports.push_back(port);
      servers += tls_server(
          port, served,
          "ssl_stapling on; ssl_stapling_file " + make_staple(pki, dir.path().string(), k) + ";");
    }
    ngx = std::make_unique<nginx_instance>(nginx_conf(1, servers), no);
  }
};

probe::probe_options staple_options() {
  auto o = quick(2, true);
  o.tls12 = false;
  return o;
}

}  // namespace

TEST_CASE("staples served by nginx: only a valid one is working, every other says what is wrong") {
  struct expect {
    staple_kind kind;
    probe::ocsp_status status;
    const char* staple_status;
    const char* reason_start;
    const char* response_status;
    const char* cert_status;  // nullptr: none for this certificate
  };
  const std::vector<expect> table = {
      {staple_kind::good, probe::ocsp_status::working, "valid",
       "good, signed by the issuer, next update ", "successful", "good"},
      {staple_kind::delegated, probe::ocsp_status::working, "valid",
       "good, signed by a responder the issuer delegated to", "successful", "good"},
      {staple_kind::successful_garbage_body, probe::ocsp_status::invalid, "malformed",
       "responseStatus successful but no BasicOCSPResponse inside", "successful", nullptr},
      {staple_kind::try_later, probe::ocsp_status::invalid, "not_successful",
       "responseStatus trylater (3), not successful", "trylater", nullptr},
      {staple_kind::revoked, probe::ocsp_status::invalid, "revoked",
       "the certificate is revoked since ", "successful", "revoked"},
      {staple_kind::unknown, probe::ocsp_status::invalid, "unknown",
       "the responder does not know the certificate (status unknown)", "successful", "unknown"},
      {staple_kind::expired, probe::ocsp_status::invalid, "expired", "expired: nextUpdate ",
       "successful", "good"},
      {staple_kind::not_yet_valid, probe::ocsp_status::invalid, "not_yet_valid",
       "not yet valid: thisUpdate ", "successful", "good"},
      {staple_kind::other_serial, probe::ocsp_status::invalid, "other_certificate",
       "it answers for another certificate: serial 1234, not this certificate (serial ",
       "successful", nullptr},
      {staple_kind::other_issuer, probe::ocsp_status::invalid, "other_certificate",
       "it answers for another certificate: serial ", "successful", nullptr},
      {staple_kind::signed_by_other_ca, probe::ocsp_status::invalid, "unverifiable",
       "it is not signed by the certificate's issuer nor by a responder the issuer delegated to "
       "(signature failure)",
       "successful", "good"},
      {staple_kind::delegated_without_eku, probe::ocsp_status::invalid, "unverifiable",
       "it is not signed by the certificate's issuer nor by a responder the issuer delegated to "
       "(missing "
       "ocspsigning usage)",
       "successful", "good"},
  };
  std::vector<staple_kind> kinds;
  for (const auto& e : table) kinds.push_back(e.kind);
  staple_farm farm(kinds);
  for (const auto& e : table) {
    INFO("staple: " << to_string(e.kind));
    auto r = probe_port(farm.ports.at(e.kind), staple_options());
    REQUIRE_FALSE(r.error);
    CHECK(r.ocsp.stapled == r.ocsp.connections);
    CHECK(r.ocsp.first_connection_stapled);
    CHECK(r.ocsp.status == e.status);
    CHECK(r.ocsp.valid_staples == (e.status == probe::ocsp_status::working ? r.ocsp.stapled : 0));
    CHECK(probe::staple_status_text(r.ocsp) == std::string(e.staple_status));
    REQUIRE(r.ocsp.staple_reason);
    CHECK(r.ocsp.staple_reason->rfind(e.reason_start, 0) == 0);
    CHECK(r.ocsp.response_status == e.response_status);
    CHECK(r.ocsp.cert_status ==
          (e.cert_status ? std::optional<std::string>(e.cert_status) : std::nullopt));
    const std::string verdicts = report_verdicts_for_test(r);
    if (e.status == probe::ocsp_status::working) {
      CHECK(verdicts.find("OCSP stapling works: a valid staple on") != std::string::npos);
    } else {
      CHECK(verdicts.find("OCSP stapling works") == std::string::npos);
      CHECK(verdicts.find("OCSP stapling is broken: " + std::to_string(r.ocsp.stapled) + " of " +
                          std::to_string(r.ocsp.stapled) + " staples are not valid (" +
                          e.staple_status + "): " + *r.ocsp.staple_reason) != std::string::npos);
    }
    if (e.kind == staple_kind::revoked) {
      CHECK(r.ocsp.revocation_reason == "keyCompromise");
      REQUIRE(r.ocsp.revocation_time_unix);
      CHECK(r.ocsp.staple_reason->find("(reason keyCompromise)") != std::string::npos);
    }
  }
}

TEST_CASE("a staple served with a leaf-only chain cannot be verified, so it is not working") {
  staple_farm farm({staple_kind::good}, "leaf");
  auto r = probe_port(farm.ports.at(staple_kind::good), staple_options());
  REQUIRE_FALSE(r.error);
  REQUIRE(r.certificate);
  CHECK(r.certificate->chain_length == 1);
  CHECK(r.ocsp.status == probe::ocsp_status::invalid);
  CHECK(r.ocsp.staple_status == tls::staple_verdict::unverifiable);
  CHECK(r.ocsp.staple_reason ==
        "its signature could not be verified: the server's chain does not include the issuer of "
        "its certificate");
  CHECK(r.ocsp.cert_status == "good");
}

TEST_CASE("3,000 random bytes stapled by a libssl server are garbage, not working") {
  temp_dir dir;
  tls::pki_options po;
  po.ocsp_url = "http://127.0.0.1:9/";
  auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  const std::string junk =
      read_file(make_staple(pki, dir.path().string(), staple_kind::random_bytes));
  REQUIRE(junk.size() == 3000);
  int port = free_port();
  staple_server srv(port, pki.chain, pki.leaf_key, {junk});
  auto r = probe_port(port, staple_options());
  REQUIRE_FALSE(r.error);
  CHECK(r.ocsp.stapled > 0);
  CHECK(r.ocsp.status == probe::ocsp_status::invalid);
  CHECK(r.ocsp.staple_status == tls::staple_verdict::garbage);
  CHECK(r.ocsp.staple_reason == "not a DER OCSP response (3000 bytes)");
  CHECK(r.ocsp.response_status == "unparsable");
  CHECK_FALSE(r.ocsp.cert_status);
  CHECK(report_verdicts_for_test(r).find("OCSP stapling works") == std::string::npos);
}

TEST_CASE(
    "a good staple on some connections and an expired one on others is invalid, naming the expired "
    "one") {
  temp_dir dir;
  tls::pki_options po;
  po.ocsp_url = "http://127.0.0.1:9/";
  auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  const std::string good = read_file(make_staple(pki, dir.path().string(), staple_kind::good));
  const std::string expired =
      read_file(make_staple(pki, dir.path().string(), staple_kind::expired));
  int port = free_port();
  // Good first, then expired, in turn: the expired one comes after a valid verdict was seen.
  staple_server srv(port, pki.chain, pki.leaf_key, {good, expired});
  auto o = quick(3, true);  // TLS 1.3 and 1.2: every handshake is a full one here
  auto r = probe_port(port, o);
  REQUIRE_FALSE(r.error);
  REQUIRE(r.ocsp.stapled >= 4);
  CHECK(r.ocsp.stapled == r.ocsp.connections);
  CHECK(r.ocsp.status == probe::ocsp_status::invalid);
  CHECK(r.ocsp.valid_staples == (r.ocsp.stapled + 1) / 2);  // the odd-numbered handshakes
  CHECK(r.ocsp.staple_status == tls::staple_verdict::expired);
  REQUIRE(r.ocsp.staple_reason);
  CHECK(r.ocsp.staple_reason->rfind("expired: nextUpdate ", 0) == 0);
  REQUIRE(r.ocsp.next_update_in_s);
  CHECK(*r.ocsp.next_update_in_s < -3000);  // the expired staple's times, not the good one's
  CHECK(report_verdicts_for_test(r).find(
            "OCSP stapling is broken: " + std::to_string(r.ocsp.stapled / 2) + " of " +
            std::to_string(r.ocsp.stapled) + " staples are not valid (expired)") !=
        std::string::npos);
}

TEST_CASE(
    "nginx staples nothing when its openssl ocsp responder says revoked: absent, not working") {
  temp_dir dir;
  int ocsp_port = free_port();
  tls::pki_options po;
  po.ocsp_url = ocsp_responder::url_for(ocsp_port);
  auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  // The responder reads its index.txt: mark the leaf revoked (keyCompromise) as `openssl ca
  // -revoke` would.
  std::string line = read_file(pki.ocsp_index);
  const auto t2 = line.find('\t', line.find('\t') + 1);
  line = "R" + line.substr(1, t2) + "250101000000Z,keyCompromise" + line.substr(t2 + 1);
  dir.write("pki/index.txt", line);
  ocsp_responder responder(pki, ocsp_port);
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(1, tls_server(port, pki, "ssl_stapling on;")), no);
  auto r = probe_port(port, staple_options());
  INFO(responder.log());
  INFO(ngx.error_log());
  REQUIRE_FALSE(r.error);
  // nginx 1.22.1 caches only "good" answers (ngx_ssl_stapling_ocsp_handler); a revoked one is
  // logged and never stapled, so a revoked staple reaches clients only from ssl_stapling_file.
  CHECK(ngx.error_log().find("certificate status \"revoked\" in the OCSP response") !=
        std::string::npos);
  CHECK(r.ocsp.stapled == 0);
  CHECK(r.ocsp.status == probe::ocsp_status::absent);
  CHECK_FALSE(r.ocsp.staple_status);
}

TEST_CASE(
    "a revoked answer of a local openssl ocsp responder, stapled as is by openssl s_server, is "
    "revoked") {
  temp_dir dir;
  int ocsp_port = free_port();
  tls::pki_options po;
  po.ocsp_url = ocsp_responder::url_for(ocsp_port);
  auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  std::string line = read_file(pki.ocsp_index);
  const auto t2 = line.find('\t', line.find('\t') + 1);
  line = "R" + line.substr(1, t2) + "250101000000Z,keyCompromise" + line.substr(t2 + 1);
  dir.write("pki/index.txt", line);
  ocsp_responder responder(pki, ocsp_port);
  // s_server -status asks the certificate's responder on each handshake and staples whatever
  // comes back (unlike nginx, which keeps only good answers); -CAfile holds the issuer it
  // needs to build the request.
  int port = free_port();
  server_process srv(
      {"openssl", "s_server", "-www", "-accept", std::to_string(port), "-cert", pki.leaf_cert,
       "-key", pki.leaf_key, "-cert_chain", pki.issuer, "-CAfile", pki.issuer, "-status"},
      (dir.path() / "s_server.log").string(), port);
  auto r = probe_port(port, staple_options());
  INFO(responder.log());
  INFO(srv.log());
  REQUIRE_FALSE(r.error);
  CHECK(r.ocsp.stapled > 0);
  CHECK(r.ocsp.status == probe::ocsp_status::invalid);
  CHECK(r.ocsp.staple_status == tls::staple_verdict::revoked);
  CHECK(r.ocsp.staple_reason ==
        "the certificate is revoked since 2025-01-01 00:00:00 UTC (reason keyCompromise)");
  CHECK(r.ocsp.revocation_time_unix == 1735689600);
  CHECK(r.ocsp.revocation_reason == "keyCompromise");
}

TEST_CASE(
    "a good answer of a local openssl ocsp responder, stapled by openssl s_server, is working") {
  temp_dir dir;
  int ocsp_port = free_port();
  tls::pki_options po;
  po.ocsp_url = ocsp_responder::url_for(ocsp_port);
  auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  ocsp_responder responder(pki, ocsp_port);
  int port = free_port();
  server_process srv(
      {"openssl", "s_server", "-www", "-accept", std::to_string(port), "-cert", pki.leaf_cert,
       "-key", pki.leaf_key, "-cert_chain", pki.issuer, "-CAfile", pki.issuer, "-status"},
      (dir.path() / "s_server.log").string(), port);
  auto r = probe_port(port, staple_options());
  INFO(responder.log());
  INFO(srv.log());
  REQUIRE_FALSE(r.error);
  CHECK(r.ocsp.stapled > 0);
  CHECK(r.ocsp.status == probe::ocsp_status::working);
  CHECK(r.ocsp.staple_status == tls::staple_verdict::valid);
  CHECK(r.ocsp.cert_status == "good");
}

TEST_CASE("probe CLI: a revoked staple in text, JSON and Prometheus") {
  staple_farm farm({staple_kind::revoked, staple_kind::good});
  const std::string bad = "127.0.0.1:" + std::to_string(farm.ports.at(staple_kind::revoked));
  const std::string good = "127.0.0.1:" + std::to_string(farm.ports.at(staple_kind::good));
  int rc = -1;
  auto j = ngxtls_json({"probe", bad, "--sni", "localhost", "-n", "2", "--tls1.3"}, &rc);
  const auto& o = j.at("targets").at(0).at("ocsp");
  CHECK(o.at("status") == "invalid");
  CHECK(o.at("staple_status") == "revoked");
  CHECK(o.at("staple_reason").get<std::string>().rfind("the certificate is revoked since ", 0) ==
        0);
  CHECK(o.at("revocation_reason") == "keyCompromise");
  CHECK(o.at("revocation_time_unix").is_number_integer());
  CHECK(o.at("cert_status") == "revoked");
  CHECK(o.at("valid_staples") == 0);
  CHECK(o.at("stapled").get<int>() > 0);

  auto text =
      run({ngxtls_binary(), "probe", bad, "--sni", "localhost", "-n", "2", "--tls1.3"}, "", 60);
  CHECK(text.out.find("OCSP stapling is broken: ") != std::string::npos);
  CHECK(text.out.find("staples are not valid (revoked): the certificate is revoked since ") !=
        std::string::npos);
  CHECK(text.out.find("OCSP stapling works") == std::string::npos);
  CHECK(text.out.find("OCSP: invalid, staple on ") != std::string::npos);

  auto prom = run({ngxtls_binary(), "probe", bad, good, "--sni", "localhost", "-n", "2", "--tls1.3",
                   "--format", "prometheus"},
                  "", 60);
  INFO(prom.out);
  CHECK(prom.out.find("ngxtls_ocsp_stapling_working{target=\"" + bad + "\"} 0\n") !=
        std::string::npos);
  CHECK(prom.out.find("ngxtls_ocsp_staple_valid{target=\"" + bad + "\",status=\"revoked\"} 0\n") !=
        std::string::npos);
  CHECK(prom.out.find("ngxtls_ocsp_stapling_working{target=\"" + good + "\"} 1\n") !=
        std::string::npos);
  CHECK(prom.out.find("ngxtls_ocsp_staple_valid{target=\"" + good + "\",status=\"valid\"} 1\n") !=
        std::string::npos);
  CHECK(prom.out.find("# TYPE ngxtls_ocsp_staple_valid gauge\n") != std::string::npos);
}
