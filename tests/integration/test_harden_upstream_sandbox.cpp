// `harden --upstream` measured by `check --sandbox`'s own machinery on the real nginx of each
// version of the matrix: the hardened snippet (two workers) runs in the sandbox, which puts a
// stand-in TLS server of ngxtls (src/sandbox/upstream_standin) in place of each backend,
// presenting a certificate for the configured proxy_ssl_name issued by the CA the sandbox trusts;
// 50 requests from 5 client connections through the hardened location must cost at most one
// full upstream handshake per worker. test_harden_upstream.cpp counts the same with an nginx
// backend's access log, independently of the stand-in.
#include <doctest/doctest.h>

#include <iostream>

#include "config/loader.hpp"
#include "harden/harden.hpp"
#include "model/model.hpp"
#include "report/harden_output.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/upstream_drive.hpp"
#include "support/nginx_version_cases.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

constexpr int k_requests = 50;
constexpr int k_workers = 2;

void hardened_in_sandbox(const nginx_version_entry& v) {
  temp_dir dir;
  tls::pki_options po;
  po.dns_names = {"front.test"};
  const auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  harden::harden_options o;
  o.nginx = *model::version::parse(v.version);
  o.tickets = harden::tickets_mode::host;
  o.ocsp = harden::ocsp_mode::off;
  o.cert_file = pki.chain;
  o.key_file = pki.leaf_key;
  o.listen = {"443"};
  // A backend by host name (never resolved: the sandbox replaces it) with its certificate name.
  o.upstreams = harden::parse_upstreams({"api=backend.example.com:8443"}, {"api=api.example.com"});
  o.upstream_trusted_certificate = pki.root_cert;  // the sandbox puts its stand-in's CA here
  report::harden_text_options t;
  t.http_block = false;
  const std::string text = "worker_processes " + std::to_string(k_workers) +
                           ";\nevents {}\nhttp {\n" + report::harden_text(harden::generate(o), t) +
                           "}\n";
  const auto conf = dir.write("nginx.conf", text);
  const auto cfg = config::load_file(conf.string());
  model::assumed_versions av;
  av.nginx = o.nginx;
  const auto m = model::build(cfg, av);
  sandbox::sandbox_options so;
  so.nginx_binary = v.binary;
  so.base_dir = (dir.path() / "runs").string();
  sandbox::sandbox sb(m, so);
  std::string untested;
  for (const auto& [label, why] : sb.untested()) untested += label + ": " + why + "; ";
  INFO("untested: " << untested);
  REQUIRE(sb.upstreams().size() == 1);
  const auto& u = sb.upstreams().front();
  CHECK(u.location == "/");
  CHECK(u.ssl_name == "api.example.com");
  REQUIRE(sb.workers() == k_workers);

  const auto* r = u.route(sandbox::upstream_variant::as_configured);
  REQUIRE(r != nullptr);
  sandbox::drive_options d;
  d.requests = k_requests;
  d.connections = 5;
  const auto drove = sandbox::drive_requests(u.port, u.sni, u.sni, r->path, d);
  const auto c = sandbox::count(r->standin->connections());
  std::cout << "  sandbox, harden --upstream on nginx " << v.version << " (" << sb.workers()
            << " workers): " << drove.sent << " requests, " << drove.ok << " ok; " << c.connections
            << " upstream TLS connections: " << c.full_handshakes << " full, " << c.resumed
            << " resumed; SNI " << (c.sni.empty() ? "" : *c.sni.begin()) << "; " << c.requests
            << " upstream requests" << std::endl;
  CHECK(drove.ok == k_requests);
  CHECK(c.requests == k_requests);
  // At most one full handshake per worker (the bar), and with the zone one in all.
  CHECK(c.full_handshakes <= static_cast<std::size_t>(sb.workers()));
  CHECK(c.full_handshakes == 1);
  CHECK(c.connections <= static_cast<std::size_t>(sb.workers()));
  CHECK(c.resumed == c.connections - c.full_handshakes);
  CHECK(c.sni == std::set<std::string>{"api.example.com"});

  // Control: the same location with a stand-in presenting a certificate for another name is
  // refused (verification on), so the counts above are of verified connections.
  const auto* wrong = u.route(sandbox::upstream_variant::wrong_name);
  REQUIRE(wrong != nullptr);
  sandbox::drive_options few;
  few.requests = 4;
  few.connections = 1;
  const auto refused = sandbox::drive_requests(u.port, u.sni, u.sni, wrong->path, few);
  CHECK(refused.bad_gateway == 4);
}
NGINX_VERSION_CASES(
    "check --sandbox stand-ins: 50 requests through a harden --upstream location cost at most one "
    "full upstream handshake per worker",
    hardened_in_sandbox)

}  // namespace
