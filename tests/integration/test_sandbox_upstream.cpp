// The sandbox's stand-in upstreams on the real nginx of each version of the matrix: one sandbox
// per version runs a front server whose locations proxy to TLS backends as the upstream rules
// describe them (a connection per request, session reuse off, SNI on and off, verification on
// and off); each location's upstream is a stand-in TLS server of ngxtls, which counts nginx's
// handshakes. The expected counts are nginx's measured behaviour (docs/nginx-facts.md#upstream-tls,
// test_nginx_upstream_tls.cpp, which measures it with an nginx backend), not the stand-in's.
// 50 requests from 5 client connections per route; one nginx start per version.
#include <doctest/doctest.h>

#include <iostream>

#include "config/loader.hpp"
#include "model/model.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/upstream_drive.hpp"
#include "support/nginx_version_cases.hpp"
#include "support/process.hpp"
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
  std::cout << u.location << " (" << sandbox::to_string(v) << "): " << c.drive.sent
            << " requests, " << c.drive.ok << " ok, " << c.drive.bad_gateway << " 502; "
            << c.standin.connections << " upstream TLS connections: " << c.standin.full_handshakes
            << " full, " << c.standin.resumed << " resumed, SNI";
  for (const auto& n : c.standin.sni) std::cout << " " << (n.empty() ? "(none)" : n);
  std::cout << ", "
            << c.standin.requests << " upstream requests" << std::endl;
  return c;
}

const sandbox::sandbox_upstream& at(const sandbox::sandbox& sb, const std::string& location) {
  for (const auto& u : sb.upstreams())
    if (u.location == location) return u;
  FAIL("no sandbox upstream for " << location);
  throw std::logic_error("unreachable");
}

void upstream_standins(const nginx_version_entry& v) {
  temp_dir dir;
  tls::pki_options po;
  po.dns_names = {"front.test"};
  const auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  const auto conf = dir.write("nginx.conf", front_config(pki));
  const auto cfg = config::load_file(conf.string());
  model::assumed_versions av;
  av.nginx = *model::version::parse(v.version);
  const auto m = model::build(cfg, av);
  sandbox::sandbox_options so;
  so.nginx_binary = v.binary;
  so.base_dir = (dir.path() / "runs").string();
  sandbox::sandbox sb(m, so);
  INFO("TLS upstreams in the model: " << m.tls_upstreams.size());
  std::string untested;
  for (const auto& [label, why] : sb.untested()) untested += label + ": " + why + "; ";
  INFO("untested: " << untested);
  REQUIRE(sb.upstreams().size() == 4);

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

}  // namespace

NGINX_VERSION_CASES("sandbox stand-in upstreams count nginx's upstream TLS handshakes",
                    upstream_standins)
