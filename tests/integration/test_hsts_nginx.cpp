// What real nginx sends for Strict-Transport-Security level by level, against what hsts-dropped
// and hsts-missing say about the same config: Debian 12's 1.22.1, upstream 1.26.3 and Debian
// sid's 1.30.x (scripts/nginx-versions.sh; a version not installed here is skipped with its
// reason). Each location sits on one line of the config, so a finding's line names it.
#include <doctest/doctest.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "support/nginx_instance.hpp"
#include "support/nginx_run.hpp"
#include "support/nginx_version_cases.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

/// One location of the test server: its path, the request that reaches it and its line.
struct place {
  std::string path;     ///< request target
  std::string line;     ///< the config line holding the location (or server directive)
  std::uint32_t n = 0;  ///< 1-based line number, filled in when the config is made
};

/// The response headers of `GET target` over TLS (HTTP/1.0), lower-cased, from s_client.
std::string response_headers(int port, const std::string& target) {
  auto r = run({"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port),
                "-servername", "hsts.test", "-quiet", "-ign_eof"},
               "GET " + target + " HTTP/1.0\r\nHost: hsts.test\r\n\r\n", 30);
  std::string head = r.out.substr(0, r.out.find("\r\n\r\n"));
  for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return head;
}

bool sends_hsts(const std::string& headers) {
  return headers.find("\nstrict-transport-security:") != std::string::npos;
}

void measure(const nginx_version_entry& v) {
  temp_dir dir;
  tls::pki_options o;
  o.dns_names = {"hsts.test"};
  auto pki = tls::make_pki((dir.path() / "pki").string(), o);
  const bool inherit_directive = v.slot == "1.30";
  std::vector<place> places = {
      {"/", "    location / { return 200 root; }"},
      {"/static/", "    location /static/ { add_header Cache-Control public; return 200 s; }"},
      {"/keep/",
       "    location /keep/ { add_header Strict-Transport-Security \"max-age=300\" always; "
       "add_header X-Keep 1; return 200 k; }"},
      {"/if/?q=1",
       "    location /if/ { add_header Strict-Transport-Security \"max-age=300\" always; "
       "if ($arg_q) { add_header X-Q 1; return 200 q; } return 200 i; }"},
      {"/nested/inner/",
       "    location /nested/ { location /nested/inner/ { add_header X-Inner 1; return 200 n; } "
       "return 200 o; }"},
  };
  if (inherit_directive) {
    places.push_back({"/merge/",
                      "    location /merge/ { add_header_inherit merge; add_header X-M 1; "
                      "return 200 m; }"});
    places.push_back({"/off/", "    location /off/ { add_header_inherit off; return 200 f; }"});
  }
  const int port = free_port();
  std::string body = "  server {\n    listen 127.0.0.1:" + std::to_string(port) +
                     " ssl;\n    server_name hsts.test;\n    ssl_certificate " + pki.chain +
                     ";\n    ssl_certificate_key " + pki.leaf_key +
                     ";\n    add_header Strict-Transport-Security \"max-age=300\" always;\n";
  for (const auto& p : places) body += p.line + "\n";
  body += "  }";
  const std::string conf = nginx_conf(1, body);
  {
    std::istringstream lines(conf);
    std::uint32_t n = 0;
    for (std::string line; std::getline(lines, line);) {
      ++n;
      for (auto& p : places)
        if (line == p.line) p.n = n;
    }
  }
  nginx_options opts;
  opts.binary = v.binary;
  opts.wait_ports = {port};
  nginx_instance ngx(conf, opts);

  auto lint = run({ngxtls_binary(), "lint", "--nginx-version", v.version, "--select",
                   "hsts-dropped,hsts-missing", "--format", "json", ngx.conf_path().string()});
  REQUIRE_MESSAGE(lint.exit_code <= 1, lint.err);
  INFO("lint: " << lint.out);
  std::map<std::uint32_t, std::string> flagged;  // line -> rule
  const auto report = nlohmann::json::parse(lint.out);
  for (const auto& f : report["findings"]) {
    flagged[f["location"]["line"].get<std::uint32_t>()] = f["rule"].get<std::string>();
    if (f.contains("locations"))
      for (const auto& l : f["locations"])
        flagged[l["line"].get<std::uint32_t>()] = f["rule"].get<std::string>();
  }
  std::size_t dropped_here = 0;
  for (const auto& p : places) {
    const std::string headers = response_headers(port, p.path);
    INFO("GET " << p.path << " (line " << p.n << "):\n" << headers);
    REQUIRE(headers.rfind("http/1.1 200", 0) == 0);
    const bool sent = sends_hsts(headers);
    std::cout << "nginx " << v.version << ": GET " << p.path << " -> Strict-Transport-Security "
              << (sent ? "sent" : "absent")
              << "; lint: " << (flagged.count(p.n) ? flagged[p.n] : std::string("no finding"))
              << std::endl;
    // The rule says the header is dropped exactly where nginx does not send it.
    CHECK(sent == (flagged.count(p.n) == 0));
    if (!sent) CHECK(flagged[p.n] == "hsts-dropped");
    dropped_here += !sent;
  }
  // Independent of the rule: which places nginx serves without the header.
  CHECK(dropped_here == (inherit_directive ? 4u : 3u));
  CHECK(flagged.size() == dropped_here);  // nothing else flagged, hsts-missing included
}

/// `nginx -t` with `add_header_inherit merge;` in http: accepted from 1.29.3 only.
void inherit_directive_known(const nginx_version_entry& v) {
  temp_dir d;
  d.write("nginx.conf", nginx_conf(1, "  add_header_inherit merge;"));
  const std::string p = d.path().string() + "/";
  auto r = run_nginx({v.binary, "-t", "-p", p, "-c", p + "nginx.conf"}, "", 30);
  std::cout << "nginx " << v.version << " -t with add_header_inherit: exit " << r.exit_code
            << std::endl;
  if (v.slot == "1.30") {
    CHECK(r.exit_code == 0);
  } else {
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("unknown directive \"add_header_inherit\"") != std::string::npos);
  }
}

}  // namespace

TEST_CASE("hsts-dropped flags exactly the locations nginx 1.22.1 serves without HSTS") {
  on_version("1.22", measure);
}
TEST_CASE("hsts-dropped flags exactly the locations nginx 1.26.3 serves without HSTS") {
  on_version("1.26", measure);
}
TEST_CASE("hsts-dropped flags exactly the locations nginx 1.30.x serves without HSTS") {
  on_version("1.30", measure);
}
TEST_CASE("add_header_inherit is an unknown directive before nginx 1.29.3") {
  on_version("1.22", inherit_directive_known);
  on_version("1.26", inherit_directive_known);
  on_version("1.30", inherit_directive_known);
}

TEST_CASE(
    "check confirms hsts-missing from the served headers, and refutes it when they carry it") {
  temp_dir dir;
  tls::pki_options o;
  o.dns_names = {"hsts.test"};
  auto pki = tls::make_pki((dir.path() / "pki").string(), o);
  const int port = free_port();
  auto server = [&](const std::string& extra) {
    return "  server {\n    listen 127.0.0.1:" + std::to_string(port) +
           " ssl;\n    server_name hsts.test;\n    ssl_certificate " + pki.chain +
           ";\n    ssl_certificate_key " + pki.leaf_key + ";\n" + extra +
           "    location / { return 200 ok; }\n  }";
  };
  // The linted config never sets the header.
  const std::string linted = dir.write("linted.conf", nginx_conf(1, server(""))).string();
  auto verdict_for = [&](const std::string& served_extra) {
    nginx_options opts;
    opts.wait_ports = {port};
    nginx_instance ngx(nginx_conf(1, server(served_extra)), opts);
    auto r = run({ngxtls_binary(), "check", linted, "--nginx-version", "1.22.1", "--select",
                  "hsts-missing", "--endpoint", "127.0.0.1:" + std::to_string(port), "-n", "2",
                  "--format", "json", "--fail-on", "never"},
                 "", 120);
    INFO(r.out << r.err);
    const auto doc = nlohmann::json::parse(r.out);
    REQUIRE(doc["findings"].size() == 1);
    CHECK(doc["findings"][0]["rule"] == "hsts-missing");
    return doc["findings"][0];
  };
  const auto absent = verdict_for("");
  CHECK(absent["verdict"] == "confirmed");
  // Served with the header (as an upstream or a module ngxtls does not model would add it).
  const auto served =
      verdict_for("    add_header Strict-Transport-Security \"max-age=300\" always;\n");
  CHECK(served["verdict"] == "refuted");
  CHECK(served.dump().find("max-age=300") != std::string::npos);
}
