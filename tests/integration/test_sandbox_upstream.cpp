// The sandbox's stand-in upstreams on the real nginx of each version of the matrix: one sandbox
// per version runs a front server whose locations proxy to TLS backends as the upstream rules
// describe them (a connection per request, session reuse off, SNI on and off, verification on
// and off); each location's upstream is a stand-in TLS server of ngxtls, which counts nginx's
// handshakes. The expected counts are nginx's measured behaviour (docs/nginx-facts.md#upstream-tls,
// test_nginx_upstream_tls.cpp, which measures it with an nginx backend), not the stand-in's.
// 50 requests from 5 client connections per route; one nginx start per version.
#include <doctest/doctest.h>

#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/loader.hpp"
#include "model/model.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/upstream_drive.hpp"
#include "support/nginx_instance.hpp"
#include "support/nginx_version_cases.hpp"
#include "support/process.hpp"
#include "support/server_process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

constexpr int k_requests = 50;

/// The front's config: each location one case. The backend host names are never resolved.
std::string front_config(const tls::pki_paths& pki) {
  return "events {}\nhttp {\n"
         "  upstream kept { server backend.example.com:443; keepalive 8; }\n"
         "  server {\n"
         "    listen 443 ssl; server_name front.test;\n"
         "    ssl_certificate " +
         pki.chain + "; ssl_certificate_key " + pki.leaf_key +
         ";\n"
         // No upstream block: a new connection per request on every version.
         "    location /per-request/ { proxy_pass https://backend.example.com; }\n"
         // Kept connections, sessions not reused.
         "    location /reuse-off/ { proxy_pass https://kept; proxy_http_version 1.1;\n"
         "      proxy_set_header Connection \"\"; proxy_ssl_session_reuse off; }\n"
         // SNI on, TLS 1.2, a connection per request: resumed handshakes carry SNI too.
         "    location /sni-tls12/ { proxy_pass https://backend.example.com;\n"
         "      proxy_ssl_server_name on; proxy_ssl_protocols TLSv1.2; }\n"
         // A target nginx works out per request: no session kept.
         "    location /variable/ { set $b backend.example.com; proxy_pass https://$b; }\n"
         // SNI on, verification on with a trusted CA.
         "    location /verified/ { proxy_pass https://kept; proxy_http_version 1.1;\n"
         "      proxy_set_header Connection \"\"; proxy_ssl_server_name on;\n"
         "      proxy_ssl_verify on; proxy_ssl_trusted_certificate " +
         pki.root_cert +
         "; }\n"
         "  }\n}\n";
}

struct route_counts {
  sandbox::drive_result drive;
  sandbox::standin_counts standin;
};

route_counts drive(const sandbox::sandbox_upstream& u, sandbox::upstream_variant v) {
  const auto* r = u.route(v);
  REQUIRE(r != nullptr);
  sandbox::drive_options o;
  o.requests = k_requests;
  o.connections = 5;
  route_counts c;
  c.drive = sandbox::drive_requests(u.port, u.sni, u.sni, r->path, o);
  c.standin = sandbox::count(r->standin->connections());
  std::cout << u.location << " (" << sandbox::to_string(v) << "): " << c.drive.sent << " requests, "
            << c.drive.ok << " ok, " << c.drive.bad_gateway << " 502; " << c.standin.connections
            << " upstream TLS connections: " << c.standin.full_handshakes << " full, "
            << c.standin.resumed << " resumed, SNI";
  for (const auto& n : c.standin.sni) std::cout << " " << (n.empty() ? "(none)" : n);
  std::cout << ", " << c.standin.requests << " upstream requests" << std::endl;
  return c;
}

const sandbox::sandbox_upstream& at(const sandbox::sandbox& sb, const std::string& location) {
  for (const auto& u : sb.upstreams())
    if (u.location == location) return u;
  FAIL("no sandbox upstream for " << location);
  throw std::logic_error("unreachable");
}

/// The config `conf` modelled for nginx `v` and run in a sandbox under `dir`/runs.
struct sandboxed {
  config::config cfg;
  model::model m;
  std::unique_ptr<sandbox::sandbox> sb;
  sandboxed(const nginx_version_entry& v, const std::filesystem::path& conf,
            const std::filesystem::path& dir)
      : cfg(config::load_file(conf.string())) {
    model::assumed_versions av;
    av.nginx = *model::version::parse(v.version);
    m = model::build(cfg, av);
    sandbox::sandbox_options so;
    so.nginx_binary = v.binary;
    so.base_dir = (dir / "runs").string();
    sb = std::make_unique<sandbox::sandbox>(m, so);
  }
};

void upstream_standins(const nginx_version_entry& v) {
  temp_dir dir;
  tls::pki_options po;
  po.dns_names = {"front.test"};
  const auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  const auto conf = dir.write("nginx.conf", front_config(pki));
  const sandboxed run(v, conf, dir.path());
  const auto& sb = *run.sb;
  INFO("TLS upstreams in the model: " << run.m.tls_upstreams.size());
  std::string untested;
  for (const auto& [label, why] : sb.untested()) untested += label + ": " + why + "; ";
  INFO("untested: " << untested);
  REQUIRE(sb.upstreams().size() == 5);

  // proxy_pass https://HOST, no upstream block: one TLS connection per request on every version
  // (1.30 too); the implicit upstream keeps the session, so only the first is a full handshake.
  auto per_request = drive(at(sb, "/per-request/"), sandbox::upstream_variant::as_configured);
  CHECK(per_request.drive.ok == k_requests);
  CHECK(per_request.standin.connections == k_requests);
  CHECK(per_request.standin.full_handshakes == 1);
  CHECK(per_request.standin.resumed == k_requests - 1);
  CHECK(per_request.standin.sni == std::set<std::string>{""});
  CHECK(per_request.standin.requests == k_requests);

  // Kept connections with reuse off: one connection per worker, each a full handshake.
  auto reuse_off = drive(at(sb, "/reuse-off/"), sandbox::upstream_variant::as_configured);
  CHECK(reuse_off.drive.ok == k_requests);
  CHECK(reuse_off.standin.resumed == 0);
  CHECK(reuse_off.standin.full_handshakes == reuse_off.standin.connections);
  CHECK(reuse_off.standin.requests == k_requests);

  // The stand-in reads SNI from each ClientHello, resumed TLS 1.2 ones included.
  auto sni12 = drive(at(sb, "/sni-tls12/"), sandbox::upstream_variant::as_configured);
  CHECK(sni12.standin.connections == k_requests);
  CHECK(sni12.standin.resumed == k_requests - 1);
  CHECK(sni12.standin.protocols == std::set<std::string>{"TLSv1.2"});
  CHECK(sni12.standin.sni == std::set<std::string>{"backend.example.com"});

  // A variable target: a connection per request, never resumed.
  auto variable = drive(at(sb, "/variable/"), sandbox::upstream_variant::as_configured);
  CHECK(variable.drive.ok == k_requests);
  CHECK(variable.standin.connections == k_requests);
  CHECK(variable.standin.full_handshakes == k_requests);
  CHECK(variable.standin.resumed == 0);

  // SNI on and verification on: the name arrives; a certificate for another name is refused.
  auto verified = drive(at(sb, "/verified/"), sandbox::upstream_variant::as_configured);
  CHECK(verified.drive.ok == k_requests);
  CHECK(verified.standin.sni == std::set<std::string>{"kept"});
  auto verified_wrong = drive(at(sb, "/verified/"), sandbox::upstream_variant::wrong_name);
  CHECK(verified_wrong.drive.bad_gateway == k_requests);
  CHECK(verified_wrong.standin.requests == 0);

  // Verification off: nginx completes requests to a certificate for another name.
  auto per_request_wrong = drive(at(sb, "/per-request/"), sandbox::upstream_variant::wrong_name);
  CHECK(per_request_wrong.drive.ok == k_requests);

  // The fix: one connection (one worker), one full handshake, on every version.
  for (const char* loc : {"/per-request/", "/reuse-off/", "/variable/"}) {
    auto fixed = drive(at(sb, loc), sandbox::upstream_variant::fixed);
    CHECK(fixed.drive.ok == k_requests);
    CHECK(fixed.standin.connections == 1);
    CHECK(fixed.standin.full_handshakes == 1);
    CHECK(fixed.standin.requests == k_requests);
  }
}

/// `openssl s_server -www`'s statistics page: the counter on the line that ends with `label`.
long s_server_stat(const std::string& page, const std::string& label) {
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);)
    if (line.find(label) != std::string::npos) return std::strtol(line.c_str(), nullptr, 10);
  FAIL("no '" << label << "' in s_server's page: " << page);
  return -1;
}

/// The independent count: the same two locations run by nginx `v` itself (no sandbox) against
/// `openssl s_server -www` backends, whose own session statistics count the TLS connections
/// (accepts) and resumptions (session cache hits). -www answers HTTP/1.0 and closes, so only the
/// locations whose upstream connections are per request anyway are compared.
void upstream_counts_match_s_server(const nginx_version_entry& v) {
  temp_dir dir;
  tls::pki_options po;
  po.dns_names = {"front.test"};
  const auto pki = tls::make_pki((dir.path() / "pki").string(), po);

  // 1. The sandbox and its stand-ins.
  const std::string locations =
      "    location /per-request/ { proxy_pass https://backend.example.com; }\n"
      "    location /variable/ { set $b backend.example.com; proxy_pass https://$b; }\n";
  const auto conf = dir.write(
      "nginx.conf",
      "events {}\nhttp {\n  server {\n    listen 443 ssl; server_name front.test;\n"
      "    ssl_certificate " +
          pki.chain + "; ssl_certificate_key " + pki.leaf_key + ";\n" + locations + "  }\n}\n");
  std::map<std::string, sandbox::standin_counts> standin;
  {
    const sandboxed run(v, conf, dir.path());
    for (const char* loc : {"/per-request/", "/variable/"})
      standin[loc] = drive(at(*run.sb, loc), sandbox::upstream_variant::as_configured).standin;
  }

  // 2. The same locations on nginx itself, to s_server backends.
  const int front = free_port(), per_request_port = free_port(), variable_port = free_port();
  auto s_server = [&](int port, const std::string& log) {
    return std::make_unique<server_process>(
        std::vector<std::string>{"openssl", "s_server", "-accept", std::to_string(port), "-cert",
                                 pki.chain, "-key", pki.leaf_key, "-www", "-quiet"},
        (dir.path() / log).string(), port);
  };
  auto per_request_backend = s_server(per_request_port, "s1.log");
  auto variable_backend = s_server(variable_port, "s2.log");
  const std::string body =
      "server {\n  listen 127.0.0.1:" + std::to_string(front) + " ssl;\n  ssl_certificate " +
      pki.chain + ";\n  ssl_certificate_key " + pki.leaf_key +
      ";\n  location /per-request/ { proxy_pass https://127.0.0.1:" +
      std::to_string(per_request_port) +
      "; }\n  location /variable/ { set $b 127.0.0.1:" + std::to_string(variable_port) +
      "; proxy_pass https://$b; }\n}\n";
  nginx_options o;
  o.binary = v.binary;
  o.wait_ports = {front};
  nginx_instance ngx(nginx_conf(1, body), o);
  for (const auto& [loc, port] : std::vector<std::pair<std::string, int>>{
           {"/per-request/", per_request_port}, {"/variable/", variable_port}}) {
    sandbox::drive_options d;
    d.requests = k_requests;
    const auto r = sandbox::drive_requests(front, "", "front.test", loc, d);
    CHECK(r.ok == k_requests);
    // The statistics page, fetched by one more client of its own (one more full handshake).
    const auto page =
        run({"curl", "-sk", "--max-time", "10", "https://127.0.0.1:" + std::to_string(port) + "/"});
    REQUIRE(page.exit_code == 0);
    const long accepts = s_server_stat(page.out, "server accepts that finished") - 1;
    const long hits = s_server_stat(page.out, "session cache hits");
    std::cout << loc << " s_server: " << accepts << " accepts, " << hits
              << " session cache hits; stand-in: " << standin[loc].handshakes << " handshakes, "
              << standin[loc].resumed << " resumed" << std::endl;
    CHECK(accepts == standin[loc].handshakes);
    CHECK(hits == standin[loc].resumed);
  }
}

/// The verdict of the finding of `rule` at the location whose path is `location`, from check's
/// JSON ("" when there is none).
std::string verdict_of(const nlohmann::json& j, const std::string& rule, const std::string& place) {
  for (const auto& f : j.at("findings"))
    if (f.at("rule") == rule && f.at("message").get<std::string>().find(place) != std::string::npos)
      return f.at("verdict").get<std::string>() + ": " + f.at("verdict_reason").get<std::string>();
  return "";
}

/// `dir`/nginx.conf: http with `http_extra`, then one TLS server front.test (a certificate made
/// for it in `dir`) holding `locations`.
std::filesystem::path front_config(temp_dir& dir, const std::string& http_extra,
                                   const std::string& locations) {
  tls::pki_options po;
  po.dns_names = {"front.test"};
  const auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  return dir.write("nginx.conf", "events {}\nhttp {\n" + http_extra +
                                     "  server {\n    listen 443 ssl; server_name front.test;\n"
                                     "    ssl_certificate " +
                                     pki.chain + "; ssl_certificate_key " + pki.leaf_key + ";\n" +
                                     locations + "  }\n}\n");
}

/// `ngxtls check --sandbox` judges the upstream rules' findings by the stand-ins' counts, and
/// with --load prices the keepalive fix.
void check_judges_upstream_findings(const nginx_version_entry& v) {
  temp_dir dir;
  const auto conf =
      front_config(dir, "",
                   "    location /per-request/ { proxy_pass https://backend.example.com; }\n"
                   "    location /reuse-off/ { proxy_pass https://backend.example.com;\n"
                   "      proxy_ssl_session_reuse off; proxy_ssl_server_name on; }\n");
  const auto r = run({ngxtls_binary(), "check", conf.string(), "--sandbox", "--nginx", v.binary,
                      "-n", "2", "--no-ocsp", "--format", "json", "--fail-on", "never", "--load",
                      "--duration", "1", "--select",
                      "upstream-tls-per-request,upstream-session-reuse-off,upstream-sni-missing,"
                      "upstream-not-verified"},
                     "", 120);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const std::string loc = "/per-request/ of front.test";
  CHECK(verdict_of(j, "upstream-tls-per-request", loc) ==
        "confirmed: 50 requests through /per-request/ opened 50 upstream TLS connections: 1 full "
        "handshake, 49 resumed, no SNI: a TLS connection per request");
  CHECK(verdict_of(j, "upstream-sni-missing", loc) ==
        "confirmed: 50 requests through /per-request/ opened 50 upstream TLS connections: 1 full "
        "handshake, 49 resumed, no SNI: the stand-in received no server name");
  CHECK(verdict_of(j, "upstream-not-verified", loc) ==
        "confirmed: nginx completed 50/50 requests through /per-request/ to a stand-in whose "
        "certificate is for another name than backend.example.com");
  CHECK(verdict_of(j, "upstream-session-reuse-off", "/reuse-off/ of front.test") ==
        "confirmed: 50 requests through /reuse-off/ opened 50 upstream TLS connections: 50 full "
        "handshakes, 0 resumed, SNI backend.example.com: every new upstream connection was a full "
        "handshake");
  // No SNI finding where it is on.
  CHECK(verdict_of(j, "upstream-sni-missing", "/reuse-off/") == "");
  REQUIRE(j.at("upstreams").size() == 2);
  const auto& per_request = j.at("upstreams").at(0);
  CHECK(per_request.at("location") == "/per-request/");
  CHECK(per_request.at("fixed").at("upstream_connections") == 1);
  const auto& load = per_request.at("load");
  std::cout << "nginx " << v.version << " --load /per-request/: " << load.dump() << std::endl;
  CHECK(load.at("configured_requests_per_second").get<double>() > 0);
  CHECK(load.at("fixed_requests_per_second").get<double>() > 0);
  // The fix keeps its upstream connections: a few (nginx opens more than the 8 in flight when
  // requests overlap on its side), against one per request as configured.
  CHECK(load.at("fixed_upstream_connections").get<int>() * 10 <
        load.at("configured_upstream_connections").get<int>());
}

/// A finding made for another nginx than the sandbox runs: lint assumes 1.26.3, where an upstream
/// block without `keepalive` keeps no connection; the sandbox's 1.30.x keeps them by default, so
/// the stand-in sees one connection for all requests and the judge refutes the finding.
void check_refutes_a_finding_nginx_disagrees_with(const nginx_version_entry& v) {
  if (v.slot != "1.30") {
    std::cout << "nginx " << v.version << ": keeps no upstream connection without keepalive, "
              << "as 1.26.3 does: nothing to refute" << std::endl;
    return;
  }
  temp_dir dir;
  const auto conf = front_config(dir, "  upstream be { server backend.example.com:443; }\n",
                                 "    location / { proxy_http_version 1.1; proxy_set_header "
                                 "Connection \"\"; proxy_pass https://be; }\n");
  const auto r = run({ngxtls_binary(), "check", conf.string(), "--sandbox", "--nginx", v.binary,
                      "--nginx-version", "1.26.3", "-n", "2", "--no-ocsp", "--format", "json",
                      "--fail-on", "never", "--select", "upstream-tls-per-request"},
                     "", 120);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(verdict_of(j, "upstream-tls-per-request", "/ of front.test") ==
        "refuted: 50 requests through / opened 1 upstream TLS connection: 1 full handshake, 0 "
        "resumed, no SNI: nginx kept its upstream connections");
}

}  // namespace

NGINX_VERSION_CASES("check --sandbox refutes an upstream finding the sandbox nginx disagrees with",
                    check_refutes_a_finding_nginx_disagrees_with)
NGINX_VERSION_CASES("check --sandbox judges the upstream findings by the stand-ins' counts",
                    check_judges_upstream_findings)
NGINX_VERSION_CASES("sandbox stand-in upstreams count nginx's upstream TLS handshakes",
                    upstream_standins)
NGINX_VERSION_CASES("the stand-ins' counts match openssl s_server's session statistics",
                    upstream_counts_match_s_server)
