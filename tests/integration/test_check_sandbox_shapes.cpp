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
  auto conf = dir.write(
      "nginx.conf",
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
                   "readable here: stand-in certificate with an RSA 2048 key") != std::string::npos);
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
  auto conf = dir.write("nginx.conf",
                        "events {}\nhttp {\n  server { listen 443 ssl; server_name a.example.test;\n"
                        "    ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256;\n"
                        "    ssl_certificate " + pki.chain + ";\n"
                        "    ssl_certificate_key /etc/ngxtls-absent/a.key; }\n}\n");
  int rc = 0;
  auto doc = sandbox_check(conf.string(), {"--tls1.2", "-n", "2"}, rc);
  const json* t = target_of(doc, "a.example.test");
  REQUIRE(t);
  REQUIRE((*t)["certificate"].is_object());
  CHECK((*t)["certificate"]["key_type"] == "RSA");
}
