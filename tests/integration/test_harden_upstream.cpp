// `harden --upstream` on the real nginx of each version of the matrix (scripts/nginx-versions.sh):
// the snippet, with a TLS backend server of the same nginx on loopback as its upstream, passes
// `nginx -t` without a warning, and 50 requests through the hardened location reach the backend
// on kept connections with at most one full TLS handshake per worker (the backend's access log
// counts connections, resumed sessions and the SNI it received, as in
// test_nginx_upstream_tls.cpp); a backend whose certificate the trusted CA did not issue gets
// 502 (verification is on). What proxy_ssl_verify_depth's default accepts is measured beside it.
#include <doctest/doctest.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "harden/harden.hpp"
#include "report/harden_output.hpp"
#include "support/nginx_instance.hpp"
#include "support/nginx_run.hpp"
#include "support/nginx_version_cases.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

constexpr int workers = 2;

/// The backend's view of the upstream requests: one log line each.
struct backend_log {
  std::set<std::string> connections;
  std::size_t requests = 0, full = 0, resumed = 0;
  std::set<std::string> sni, protocols;
};

backend_log read_backend_log(const std::filesystem::path& file) {
  backend_log out;
  std::set<std::string> seen;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string connection, reused, sni, protocol;
    words >> connection >> reused >> sni >> protocol;
    ++out.requests;
    out.connections.insert(connection);
    if (seen.insert(connection).second) ++(reused == "r" ? out.resumed : out.full);
    out.sni.insert(sni);
    out.protocols.insert(protocol);
  }
  return out;
}

/// A TLS backend server on `port`: its certificate, its log of every request.
std::string backend_server(int port, const tls::pki_paths& pki, const std::string& log) {
  return "server {\n  listen 127.0.0.1:" + std::to_string(port) +
         " ssl;\n  server_name backend.test;\n  ssl_certificate " + pki.chain +
         ";\n  ssl_certificate_key " + pki.leaf_key +
         ";\n  ssl_protocols TLSv1.2 TLSv1.3;\n  ssl_session_cache shared:backend:1m;\n"
         "  keepalive_requests 1000;\n  access_log " +
         log + " up;\n  location / { return 200 \"ok\\n\"; }\n}\n";
}

/// HTTP status codes of `n` requests to `url` on one client connection (curl reuses it).
std::vector<std::string> get(const std::string& url, int n) {
  std::vector<std::string> argv{"curl", "-sk", "--max-time", "20"};
  for (int i = 0; i < n; ++i)
    argv.insert(argv.end(), {url, "-o", "/dev/null", "-w", "%{http_code}\\n"});
  auto r = run(argv, "", 60);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::vector<std::string> codes;
  std::istringstream in(r.out);
  for (std::string c; std::getline(in, c);) codes.push_back(c);
  return codes;
}

struct hardened_setup {
  temp_dir dir;
  tls::pki_paths backend_pki, other_pki;
  int front = free_port(), api = free_port(), other = free_port();
  std::string conf;

  explicit hardened_setup(const nginx_version_entry& v) {
    tls::pki_options po;
    po.dns_names = {"backend.test"};
    backend_pki = tls::make_pki((dir.path() / "backend").string(), po);
    other_pki = tls::make_pki((dir.path() / "other").string(), po);  // another root CA
    harden::harden_options o;
    o.nginx = *model::version::parse(v.version);
    o.openssl = {3, 0, 0};
    o.tickets = harden::tickets_mode::host;
    o.ocsp = harden::ocsp_mode::off;
    o.cert_file = backend_pki.chain;
    o.key_file = backend_pki.leaf_key;
    o.listen = {"127.0.0.1:" + std::to_string(front)};
    o.listen_flags = "reuseport";  // the kernel spreads client connections over the workers
    o.upstreams = harden::parse_upstreams(
        {"api=127.0.0.1:" + std::to_string(api), "other=127.0.0.1:" + std::to_string(other)},
        {"api=backend.test", "other=backend.test"});
    o.upstream_trusted_certificate = backend_pki.root_cert;
    report::harden_text_options t;
    t.http_block = false;
    conf = nginx_conf(workers,
                      "log_format up '$connection $ssl_session_reused $ssl_server_name "
                      "$ssl_protocol';\n" +
                          report::harden_text(harden::generate(o), t) +
                          backend_server(api, backend_pki, "api.log") +
                          backend_server(other, other_pki, "other.log"));
  }
};

void hardened_location(const nginx_version_entry& v) {
  hardened_setup s(v);
  nginx_options no;
  no.binary = v.binary;
  no.wait_ports = {s.front, s.api, s.other};
  nginx_instance ngx(s.conf, no);
  const auto t = ngx.test_config();
  CAPTURE(t.err);
  CHECK(t.exit_code == 0);
  CHECK(t.err.find("[warn]") == std::string::npos);
  CHECK(t.err.find("[emerg]") == std::string::npos);

  // ngxtls lint on the same file, with its certificates and CA on disk: no upstream finding.
  const auto lint = run({ngxtls_binary(), "lint", "--nginx-version", v.version, "--format", "json",
                         "--fail-on", "never", ngx.conf_path().string()},
                        "", 60);
  REQUIRE_MESSAGE(lint.exit_code == 0, lint.err);
  for (const auto& f : nlohmann::json::parse(lint.out).at("findings")) {
    CAPTURE(f.dump());
    CHECK(f.at("rule").get<std::string>().rfind("upstream-", 0) != 0);
  }

  // 50 requests: 5 client connections of 10, one after another.
  std::size_t ok = 0;
  for (int c = 0; c < 5; ++c)
    for (const auto& code : get("https://127.0.0.1:" + std::to_string(s.front) + "/api/", 10))
      ok += code == "200";
  CHECK(ok == 50);
  // Verification on: a backend whose certificate another CA issued is refused.
  for (const auto& code : get("https://127.0.0.1:" + std::to_string(s.front) + "/other/", 2))
    CHECK(code == "502");
  ngx.stop();  // flushes the logs

  const backend_log api = read_backend_log(ngx.prefix() / "api.log");
  std::cout << "  harden --upstream on nginx " << v.version << ": " << api.requests
            << " upstream requests on " << api.connections.size() << " TLS connections, "
            << api.full << " full, " << api.resumed << " resumed handshakes; SNI "
            << *api.sni.begin() << ", " << *api.protocols.begin() << std::endl;
  CHECK(api.requests == 50);
  // Kept connections: at most one per worker (the clients come one after another).
  CHECK(api.connections.size() >= 1);
  CHECK(api.connections.size() <= static_cast<std::size_t>(workers));
  // At most one full handshake per worker; with the zone the workers share the session, so one
  // in all (docs/nginx-facts.md#upstream-tls).
  CHECK(api.full == 1);
  CHECK(api.resumed == api.connections.size() - 1);
  CHECK(api.sni == std::set<std::string>{"backend.test"});
  CHECK(api.protocols == std::set<std::string>{"TLSv1.3"});
  // The refused backend saw handshakes but no request.
  CHECK(read_backend_log(ngx.prefix() / "other.log").requests == 0);
}
NGINX_VERSION_CASES(
    "harden --upstream passes nginx -t: 50 requests through the hardened location cost one full "
    "upstream handshake and verify the backend",
    hardened_location)

void verify_depth(const nginx_version_entry& v) {
  hardened_setup s(v);
  // The snippet leaves nginx's default depth 1: the chain is leaf, one intermediate, the trusted
  // root. Depth 0 is the control: it refuses that chain.
  REQUIRE_FALSE(std::regex_search(s.conf, std::regex("(^|\\n) *proxy_ssl_verify_depth")));
  std::string conf = s.conf;
  const std::string verify = "proxy_ssl_verify on;";
  for (std::size_t at = 0; (at = conf.find(verify, at)) != std::string::npos; at += verify.size())
    conf.insert(at + verify.size(), " proxy_ssl_verify_depth 0;");
  nginx_options no;
  no.binary = v.binary;
  no.wait_ports = {s.front, s.api, s.other};
  nginx_instance ngx(conf, no);
  for (const auto& code : get("https://127.0.0.1:" + std::to_string(s.front) + "/api/", 2))
    CHECK(code == "502");
  CHECK(ngx.error_log().find("upstream SSL certificate verify error") != std::string::npos);
}
NGINX_VERSION_CASES(
    "proxy_ssl_verify_depth: the default 1 accepts a backend certificate issued by one "
    "intermediate under the trusted root and 0 refuses it",
    verify_depth)

}  // namespace
