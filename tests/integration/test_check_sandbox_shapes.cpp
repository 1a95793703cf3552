// ngxtls check --sandbox on the shapes real configs have: certificates that are not on this
// machine (stand-ins of the key type the cipher list needs), a default server that rejects
// every handshake, TLS 1.2 session-ID verdicts per name, and what the sandbox cannot reach.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/fixture_env.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using json = nlohmann::json;

namespace {

json sandbox_check(const std::string& conf, std::vector<std::string> extra, int& rc) {
  std::vector<std::string> argv = {
      test::ngxtls_binary(), "check", conf, "--sandbox", "--format", "json", "--fail-on", "never"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto r = test::run(argv, "", 120);
  rc = r.exit_code;
  INFO("stderr: " << r.err);
  REQUIRE(!r.out.empty());
  return json::parse(r.out);
}

const json* target_of(const json& doc, const std::string& sni) {
  for (const auto& t : doc["probe"]["targets"])
    if (t["sni"] == sni) return &t;
  return nullptr;
}

const json* find_finding(const json& doc, const std::string& rule, const std::string& server) {
  for (const auto& f : doc["findings"])
    if (f["rule"] == rule && (server.empty() || f.value("server", "") == server)) return &f;
  return nullptr;
}

std::string all_notes(const json& doc) {
  std::string s;
  for (const auto& n : doc["sandbox"]["notes"])
    s += n["server"].get<std::string>() + ": " + n["text"].get<std::string>() + "\n";
  return s;
}

}  // namespace

TEST_CASE("sandbox: stand-in certificates take the key type the server's cipher list needs") {
  test::temp_dir dir;
  auto conf = dir.write("nginx.conf",
                        "events {}\nhttp {\n  ssl_protocols TLSv1.2;\n"
                        "  server { listen 443 ssl; server_name rsa.example.test;\n"
                        "    ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384;\n"
                        "    ssl_certificate /etc/ngxtls-absent/rsa.pem;\n"
                        "    ssl_certificate_key /etc/ngxtls-absent/rsa.key; }\n"
                        "  server { listen 443 ssl; server_name ec.example.test;\n"
                        "    ssl_certificate /etc/ngxtls-absent/ec.pem;\n"
                        "    ssl_certificate_key /etc/ngxtls-absent/ec.key; }\n"
                        "  server { listen 8443 ssl; server_name dual.example.test;\n"
                        "    ssl_certificate /etc/ngxtls-absent/dual-1.pem;\n"
                        "    ssl_certificate_key /etc/ngxtls-absent/dual-1.key;\n"
                        "    ssl_certificate /etc/ngxtls-absent/dual-2.pem;\n"
                        "    ssl_certificate_key /etc/ngxtls-absent/dual-2.key; }\n}\n");
  int rc = 0;
  auto doc = sandbox_check(conf.string(), {"--tls1.2", "-n", "2"}, rc);
  CHECK(rc == 0);
  const std::string notes = all_notes(doc);
  INFO(notes);
  // An RSA-only TLS 1.2 list: an EC stand-in would fail every handshake (no shared cipher).
  const json* rsa = target_of(doc, "rsa.example.test");
  REQUIRE(rsa);
  CHECK((*rsa)["error"].is_null());
  REQUIRE((*rsa)["certificate"].is_object());
  CHECK((*rsa)["certificate"]["key_type"] == "RSA");
  CHECK(notes.find("rsa.example.test: ssl_certificate \"/etc/ngxtls-absent/rsa.pem\" is not "
                   "readable here: stand-in certificate with an RSA 2048 key") !=
        std::string::npos);
  // nginx's default list (HIGH:!aNULL:!MD5) takes ECDSA suites: EC.
  const json* ec = target_of(doc, "ec.example.test");
  REQUIRE(ec);
  REQUIRE((*ec)["certificate"].is_object());
  CHECK((*ec)["certificate"]["key_type"] == "EC");
  // Two certificates: one of each kind, as a dual RSA/ECDSA deployment has.
  CHECK(notes.find("dual.example.test: ssl_certificate \"/etc/ngxtls-absent/dual-1.pem\" is not "
                   "readable here: stand-in certificate with an EC") != std::string::npos);
  CHECK(notes.find("dual.example.test: ssl_certificate \"/etc/ngxtls-absent/dual-2.pem\" is not "
                   "readable here: stand-in certificate with an RSA 2048 key") !=
        std::string::npos);
}

TEST_CASE("sandbox: a readable RSA certificate whose key is absent gets an RSA stand-in") {
  test::temp_dir dir;
  tls::pki_options rsa;
  rsa.key_type = "rsa";
  rsa.dns_names = {"a.example.test"};
  const auto pki = tls::make_pki((dir.path() / "pki").string(), rsa);
  // A readable RSA chain whose key file is not on this machine.
  auto conf =
      dir.write("nginx.conf",
                "events {}\nhttp {\n  server { listen 443 ssl; server_name a.example.test;\n"
                "    ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256;\n"
                "    ssl_certificate " +
                    pki.chain +
                    ";\n"
                    "    ssl_certificate_key /etc/ngxtls-absent/a.key; }\n}\n");
  int rc = 0;
  auto doc = sandbox_check(conf.string(), {"--tls1.2", "-n", "2"}, rc);
  const json* t = target_of(doc, "a.example.test");
  REQUIRE(t);
  REQUIRE((*t)["certificate"].is_object());
  CHECK((*t)["certificate"]["key_type"] == "RSA");
}

TEST_CASE("sandbox: a default server that rejects handshakes refuses the no-SNI probe, as asked") {
  test::temp_dir dir;
  auto conf = dir.write(
      "nginx.conf",
      "events {}\nhttp {\n  ssl_protocols TLSv1.2 TLSv1.3;\n"
      "  server { listen 443 ssl default_server; server_name _; ssl_reject_handshake on; }\n"
      "  server { listen 443 ssl; server_name a.example.test; ssl_protocols TLSv1.3;\n"
      "    ssl_certificate /etc/ngxtls-absent/a.pem; ssl_certificate_key /etc/ngxtls-absent/a.key; "
      "}\n"
      "  server { listen 443 ssl; server_name b.example.test;\n"
      "    ssl_certificate /etc/ngxtls-absent/b.pem; ssl_certificate_key /etc/ngxtls-absent/b.key; "
      "}\n"
      "}\n");
  int rc = 0;
  auto doc = sandbox_check(conf.string(), {"-n", "4"}, rc);
  CHECK(rc == 0);
  std::string notes;
  for (const auto& n : doc["notes"]) notes += n.get<std::string>() + "\n";
  INFO(notes);
  INFO(all_notes(doc));
  CHECK(notes.find("could not be probed") == std::string::npos);
  // The name-based servers are probed and speak for their findings.
  for (const char* name : {"a.example.test", "b.example.test"}) {
    const json* t = target_of(doc, name);
    REQUIRE(t);
    CHECK((*t)["error"].is_null());
  }
  // The no-SNI probe reached the rejecting default server and was refused: the report says so.
  const json* nosni = target_of(doc, "");
  REQUIRE(nosni);
  CHECK(!(*nosni)["error"].is_null());
  CHECK(notes.find("(no SNI) refused the handshake, as its ssl_reject_handshake on asks") !=
        std::string::npos);
  // A server with no certificate and ssl_reject_handshake on is valid nginx (1.19.4 and later):
  // no stand-in note claims nginx would refuse it, and nginx -t passes the config as written.
  CHECK(all_notes(doc).find("nginx would refuse") == std::string::npos);
  CHECK(doc["nginx_test"]["verdict"] == "passed");
  // A verdict judged by a name-based server's own probe: its ssl_protocols is ignored, the
  // socket's default server's apply (docs/nginx-facts.md#default-server-rules).
  const json* f = find_finding(doc, "protocols-ignored-per-sni", "a.example.test");
  REQUIRE(f);
  CHECK((*f)["verdict"] == "confirmed");
  CHECK((*f)["verdict_reason"].get<std::string>().find("TLSv1.2 accepted under this name") !=
        std::string::npos);
  // The sandbox answers with its own `return 200`, without the server's add_header or
  // upstreams: its response headers cannot confirm hsts-missing.
  for (const char* name : {"a.example.test", "b.example.test"}) {
    const json* h = find_finding(doc, "hsts-missing", name);
    REQUIRE(h);
    CHECK((*h)["verdict"] == "not_testable");
  }
  // No error finding stands, and a refused no-SNI probe is no reason for exit 3.
  auto r = test::run({test::ngxtls_binary(), "check", conf.string(), "--sandbox", "-n", "2",
                      "--fail-on", "error"});
  CHECK(r.exit_code == 0);
}

TEST_CASE(
    "sandbox: session-ID resumption per name confirms session-setting-ignored and "
    "session-cache-per-worker") {
  {
    // A cache only in the name-based server: its sessions live in the default server's
    // context, which has none (docs/nginx-facts.md#default-server-rules).
    test::temp_dir dir;
    auto conf = dir.write(
        "nginx.conf",
        "events {}\nhttp {\n  ssl_session_tickets off;\n"
        "  server { listen 443 ssl default_server; server_name _; ssl_reject_handshake on; }\n"
        "  server { listen 443 ssl; server_name a.example.test;\n"
        "    ssl_session_cache shared:A:1m; }\n}\n");
    int rc = 0;
    auto doc = sandbox_check(conf.string(), {"--tls1.2", "-n", "10"}, rc);
    CHECK(rc == 0);
    const json* f = find_finding(doc, "session-setting-ignored", "a.example.test");
    REQUIRE(f);
    CHECK((*f)["verdict"] == "confirmed");
    CHECK((*f)["verdict_reason"].get<std::string>().find("TLS 1.2 session IDs never resumed "
                                                         "under this name (0/10)") !=
          std::string::npos);
  }
  {
    // The same cache set for the whole socket: the finding is gone, and session IDs resume.
    test::temp_dir dir;
    auto conf = dir.write(
        "nginx.conf",
        "events {}\nhttp {\n  ssl_session_tickets off;\n  ssl_session_cache shared:A:1m;\n"
        "  server { listen 443 ssl default_server; server_name _; ssl_reject_handshake on; }\n"
        "  server { listen 443 ssl; server_name a.example.test; }\n}\n");
    int rc = 0;
    auto doc = sandbox_check(conf.string(), {"--tls1.2", "-n", "10"}, rc);
    CHECK(rc == 0);
    CHECK(find_finding(doc, "session-setting-ignored", "") == nullptr);
    const json* t = target_of(doc, "a.example.test");
    REQUIRE(t);
    int resumed = -1;
    for (const auto& p : (*t)["protocols"])
      if (p["mechanism"] == "session_id") resumed = p["resumed"].get<int>();
    CHECK(resumed == 10);
  }
  {
    // A builtin cache split over four reuseport workers, under a name of a socket whose default
    // server rejects every handshake.
    test::temp_dir dir;
    auto conf =
        dir.write("nginx.conf",
                  "worker_processes 4;\nevents {}\nhttp {\n  ssl_session_cache builtin:20000;\n"
                  "  server { listen 443 ssl default_server reuseport; server_name _;\n"
                  "    ssl_reject_handshake on; }\n"
                  "  server { listen 443 ssl; server_name a.example.test; }\n}\n");
    int rc = 0;
    // 80 attempts: each reaches the caching worker with p = 1/4, so 0 or 80 resumed has
    // probability below 1e-9.
    auto doc = sandbox_check(conf.string(), {"--tls1.2", "-n", "80"}, rc);
    CHECK(rc == 0);
    const json* f = find_finding(doc, "session-cache-per-worker", "");
    REQUIRE(f);
    CHECK((*f)["verdict"] == "confirmed");
  }
}

TEST_CASE(
    "sandbox: client-certificate CAs, upstreams and resolvers it cannot reach are stood in or "
    "kept, listed, and the run goes on") {
  {
    // Hosts nginx resolves while it tests the config: stood in by 127.0.0.1 in the whole-config
    // test, each listed; a resolver given by address is kept and said to be unreachable.
    test::temp_dir dir;
    auto conf =
        dir.write("nginx.conf",
                  "events {}\nhttp {\n"
                  "  upstream backend { server backend.internal.example:8080; }\n"
                  "  server { listen 443 ssl; server_name a.example.test;\n"
                  "    ssl_certificate /etc/ngxtls-absent/a.pem;\n"
                  "    ssl_certificate_key /etc/ngxtls-absent/a.key;\n"
                  "    ssl_client_certificate /etc/ngxtls-absent/clients-ca.pem;\n"
                  "    ssl_verify_client on;\n"
                  "    resolver 10.0.0.53 valid=30s;\n"
                  "    location / { proxy_pass http://backend; }\n"
                  "    location /api { proxy_pass https://api.internal.example; }\n  }\n}\n");
    int rc = 0;
    auto doc = sandbox_check(conf.string(), {"-n", "2"}, rc);
    CHECK(rc == 0);
    const std::string notes = all_notes(doc);
    INFO(notes);
    CHECK(doc["errors"].empty());
    CHECK(doc["nginx_test"]["verdict"] == "passed");
    CHECK(doc["sandbox"]["untested"].empty());
    const json* t = target_of(doc, "a.example.test");
    REQUIRE(t);
    CHECK((*t)["error"].is_null());
    CHECK(notes.find("ssl_client_certificate \"/etc/ngxtls-absent/clients-ca.pem\"") !=
          std::string::npos);
    CHECK(notes.find("resolver \"10.0.0.53\": kept, but not reachable") != std::string::npos);
    CHECK(notes.find("server at " + conf.string() +
                     ":3:22: host \"backend.internal.example\" stands as 127.0.0.1") !=
          std::string::npos);
    CHECK(notes.find("proxy_pass at " + conf.string() +
                     ":11:21: host \"api.internal.example\" stands as 127.0.0.1") !=
          std::string::npos);
    // `http://backend` names the upstream block: nothing to resolve, nothing replaced.
    CHECK(notes.find("host \"backend\"") == std::string::npos);
  }
  {
    // A readable certificate and a client CA that is not on this machine: left out,
    // ssl_verify_client would make nginx refuse the server; a CA of the sandbox's own stands in.
    test::temp_dir dir;
    tls::pki_options o;
    o.dns_names = {"a.example.test"};
    const auto pki = tls::make_pki((dir.path() / "pki").string(), o);
    auto conf =
        dir.write("nginx.conf",
                  "events {}\nhttp {\n  server { listen 443 ssl; server_name a.example.test;\n"
                  "    ssl_certificate " +
                      pki.chain + ";\n    ssl_certificate_key " + pki.leaf_key +
                      ";\n"
                      "    ssl_client_certificate /etc/ngxtls-absent/clients-ca.pem;\n"
                      "    ssl_verify_client optional;\n  }\n}\n");
    int rc = 0;
    auto doc = sandbox_check(conf.string(), {"-n", "2"}, rc);
    const std::string notes = all_notes(doc);
    INFO(notes);
    CHECK(rc == 0);
    CHECK(doc["errors"].empty());
    CHECK(doc["nginx_test"]["verdict"] == "passed");
    CHECK(doc["sandbox"]["untested"].empty());
    const json* t = target_of(doc, "a.example.test");
    REQUIRE(t);
    CHECK((*t)["error"].is_null());
    CHECK(notes.find("ssl_client_certificate \"/etc/ngxtls-absent/clients-ca.pem\" is not "
                     "readable here: a CA of the sandbox's own stands in for it") !=
          std::string::npos);
  }
}
