// check reports: SARIF carries each verdict and lowers refuted findings to level note.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "report/check_output.hpp"

using namespace ngxtls;
using json = nlohmann::json;

namespace {

check::checked_finding checked(const std::string& rule, engine::severity s, check::verdict v,
                               int line) {
  check::checked_finding c;
  c.finding.rule = rule;
  c.finding.level = s;
  c.finding.message = rule + " message";
  c.finding.location = {"/etc/nginx/nginx.conf", static_cast<std::uint32_t>(line), 5};
  c.result = v;
  c.reason = "because " + rule;
  c.evidence.push_back({"TLSv1.3 resumed", "0/20", "127.0.0.1:443"});
  return c;
}

}  // namespace

TEST_CASE("check SARIF: verdicts in properties, refuted findings lowered to note") {
  report::check_report r;
  auto a =
      checked("tls13-resumption-disabled", engine::severity::error, check::verdict::confirmed, 3);
  auto b = checked("ocsp-stapling-dead", engine::severity::warning, check::verdict::refuted, 7);
  auto c = checked("weak-ciphers", engine::severity::note, check::verdict::not_testable, 9);
  r.checked = {a, b, c};
  r.lint.findings = {a.finding, b.finding, c.finding};
  auto doc = json::parse(report::render_check_sarif(r, ""));
  const auto& results = doc["runs"][0]["results"];
  REQUIRE(results.size() == 3);
  CHECK(results[0]["level"] == "error");
  CHECK(results[0]["properties"]["verdict"] == "confirmed");
  CHECK(results[0]["properties"]["probe_evidence"][0]["value"] == "0/20");
  CHECK(results[1]["level"] == "note");
  CHECK(results[1]["properties"]["lint_level"] == "warning");
  CHECK(results[1]["properties"]["verdict"] == "refuted");
  CHECK(results[1]["properties"]["verdict_reason"] == "because ocsp-stapling-dead");
  CHECK(results[2]["level"] == "note");
  CHECK(results[2]["properties"]["verdict"] == "not_testable");
  CHECK_FALSE(results[2]["properties"].contains("lint_level"));
}

TEST_CASE("check text and JSON: the sandbox section") {
  report::check_report r;
  report::sandbox_summary s;
  s.nginx_binary = "/usr/sbin/nginx";
  s.nginx_version = "nginx version: nginx/1.22.1";
  s.instances = 2;
  s.workers = 4;
  s.sockets = {{"*:443", "127.0.0.1:40001"}};
  s.notes = {{"a.example", "stand-in certificate"}};
  s.untested = {{"b.example", "nginx -t rejects it"}};
  r.sandbox = s;
  auto text = report::render_check_text(r, false);
  CHECK(text.find("2 masters with reuseport x 4 workers") != std::string::npos);
  CHECK(text.find("*:443 -> 127.0.0.1:40001") != std::string::npos);
  CHECK(text.find("not tested: b.example: nginx -t rejects it") != std::string::npos);
  auto doc = json::parse(report::render_check_json(r));
  CHECK(doc["sandbox"]["instances"] == 2);
  CHECK(doc["sandbox"]["sockets"][0]["sandbox"] == "127.0.0.1:40001");
  CHECK(doc["sandbox"]["untested"][0]["server"] == "b.example");
}

TEST_CASE("check text shows control bytes from the config and the peer as \\x escapes") {
  report::check_report r;
  auto a = checked("unknown-directive", engine::severity::warning, check::verdict::not_testable, 3);
  a.finding.message = "unknown directive \"ssl_\x1b[2J\"";
  a.finding.location.file = "/etc/nginx/\x1b]0;x\x07.conf";
  a.reason = "peer said \r\x1b[1A";
  a.evidence = {{"name\x1b", "value\x7f", "target\x9b"}};
  r.checked = {a};
  r.notes = {"note \x1b[31m"};
  r.errors = {"error \x00x"};
  report::sandbox_summary s;
  s.sockets = {{"*:443\x1b", "127.0.0.1:1"}};
  r.sandbox = s;
  const auto text = report::render_check_text(r, false);
  CAPTURE(text);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find('\x07') == std::string::npos);
  CHECK(text.find('\x7f') == std::string::npos);
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find("\x9b") == std::string::npos);
  CHECK(text.find("/etc/nginx/\\x1b]0;x\\x07.conf:3:5: warning [unknown-directive] unknown "
                  "directive \"ssl_\\x1b[2J\"") != std::string::npos);
  CHECK(text.find("peer said \\x0d\\x1b[1A") != std::string::npos);
  CHECK(text.find("name\\x1b = value\\x7f  (target\\x9b)") != std::string::npos);
  CHECK(text.find("note: note \\x1b[31m") != std::string::npos);
  CHECK(text.find("*:443\\x1b -> 127.0.0.1:1") != std::string::npos);
}

TEST_CASE("check text shows each finding's fix lines as lint's text does") {
  report::check_report r;
  auto a =
      checked("tls13-resumption-disabled", engine::severity::error, check::verdict::confirmed, 3);
  a.finding.fix = "ssl_session_cache shared:SSL:10m;\nssl_session_timeout 1h;";
  auto b = checked("weak-ciphers", engine::severity::note, check::verdict::not_testable, 9);
  r.checked = {a, b};
  r.lint.findings = {a.finding, b.finding};
  const auto text = report::render_check_text(r, false);
  CAPTURE(text);
  CHECK(text.find("      TLSv1.3 resumed = 0/20  (127.0.0.1:443)\n"
                  "    fix:\n"
                  "      ssl_session_cache shared:SSL:10m;\n"
                  "      ssl_session_timeout 1h;\n") != std::string::npos);
  // One fix block: the finding without a fix has none.
  CHECK(text.find("fix:") == text.rfind("fix:"));
}

TEST_CASE("check SARIF: a finding with several places gives each place its verdict") {
  report::check_report r;
  auto a = checked("tls13-missing", engine::severity::warning, check::verdict::confirmed, 3);
  a.finding.also_at = {{"/etc/nginx/nginx.conf", 4, 5}, {"/etc/nginx/nginx.conf", 5, 5}};
  auto b = checked("weak-ciphers", engine::severity::warning, check::verdict::refuted, 9);
  r.checked = {a, b};
  r.lint.findings = {a.finding, b.finding};
  auto doc = json::parse(report::render_check_sarif(r, ""));
  const auto& results = doc["runs"][0]["results"];
  REQUIRE(results.size() == 4);
  for (int i = 0; i < 3; ++i) {
    CHECK(results[i]["ruleId"] == "tls13-missing");
    CHECK(results[i]["properties"]["verdict"] == "confirmed");
  }
  CHECK(results[3]["properties"]["verdict"] == "refuted");
  CHECK(results[3]["level"] == "note");
}
