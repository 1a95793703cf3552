// The report format registry, and check's streamed JSON and SARIF: the same bytes as lint's
// record parsed back, patched with the verdicts and dumped whole (how they were made before
// they were streamed, kept here as the reference).

#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "report/check_output.hpp"
#include "report/fingerprint.hpp"
#include "report/format.hpp"
#include "report/json_writer.hpp"
#include "report/probe_output.hpp"
#include "report/sarif_output.hpp"

using namespace ngxtls;
using json = nlohmann::json;

namespace {

json evidence_json(const check::checked_finding& c) {
  json ev = json::array();
  for (const auto& e : c.evidence)
    ev.push_back({{"name", e.name}, {"value", e.value}, {"target", e.target}});
  return ev;
}

json sandbox_reference(const report::sandbox_summary& sb) {
  json j = {{"nginx_binary", sb.nginx_binary},   {"nginx_version", sb.nginx_version},
            {"instances", sb.instances},         {"workers", sb.workers},
            {"pid_namespace", sb.pid_namespace}, {"reload", sb.reload}};
  j["sockets"] = json::array();
  for (const auto& [conf, local] : sb.sockets)
    j["sockets"].push_back({{"configured", conf}, {"sandbox", local}});
  j["notes"] = json::array();
  for (const auto& [server, text] : sb.notes)
    j["notes"].push_back({{"server", server}, {"text", text}});
  j["untested"] = json::array();
  for (const auto& [server, why] : sb.untested)
    j["untested"].push_back({{"server", server}, {"reason", why}});
  return j;
}

json nginx_test_reference(const report::nginx_test_summary& t) {
  return {{"verdict", t.verdict},
          {"location",
           t.where.file.empty()
               ? json(nullptr)
               : json{{"file", t.where.file}, {"line", t.where.line}, {"column", t.where.column}}},
          {"message", t.message},
          {"reason", t.reason}};
}

std::string check_json_reference(const report::check_report& r) {
  auto doc = json::parse(report::render_json(r.lint));
  auto& findings = doc["findings"];
  for (std::size_t i = 0; i < r.checked.size() && i < findings.size(); ++i) {
    findings[i]["verdict"] = check::to_string(r.checked[i].result);
    findings[i]["verdict_reason"] = r.checked[i].reason;
    findings[i]["probe_evidence"] = evidence_json(r.checked[i]);
  }
  doc["probe"] = report::probe_json(r.probes);
  doc["key_names"] = r.key_names;
  doc["notes"] = r.notes;
  doc["errors"] = r.errors;
  if (r.sandbox) doc["sandbox"] = sandbox_reference(*r.sandbox);
  // A sandbox run lists its upstream measurements (none in these samples).
  if (r.sandbox) doc["upstreams"] = json::array();
  // And the QUIC probes of the QUIC sockets it served (none in these samples).
  if (r.sandbox) doc["quic_probe"] = report::probe_json({});
  if (r.nginx_test) doc["nginx_test"] = nginx_test_reference(*r.nginx_test);
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + '\n';
}

std::string check_sarif_reference(const report::check_report& r, const std::string& dir) {
  auto doc = json::parse(report::render_sarif(r.lint, dir));
  auto& props = doc["runs"][0]["properties"];
  if (r.sandbox) props["sandbox"] = sandbox_reference(*r.sandbox);
  if (r.nginx_test) props["nginx_test"] = nginx_test_reference(*r.nginx_test);
  if (!r.notes.empty()) props["check_notes"] = r.notes;
  if (!r.errors.empty()) props["check_errors"] = r.errors;
  auto& results = doc["runs"][0]["results"];
  // One result per place: finding i's places are consecutive results, each with its verdict.
  std::size_t k = 0;
  for (std::size_t i = 0; i < r.checked.size(); ++i)
    for (std::size_t p = 0; p <= r.lint.findings[i].also_at.size() && k < results.size(); ++p) {
      const auto& c = r.checked[i];
      auto& res = results[k++];
      if (!res.contains("properties")) res["properties"] = json::object();
      res["properties"]["verdict"] = check::to_string(c.result);
      res["properties"]["verdict_reason"] = c.reason;
      res["properties"]["probe_evidence"] = evidence_json(c);
      if (c.result == check::verdict::refuted) {
        res["properties"]["lint_level"] = res["level"];
        res["level"] = "note";
      }
    }
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + '\n';
}

check::checked_finding checked(const std::string& rule, engine::severity s, check::verdict v,
                               std::uint32_t line) {
  check::checked_finding c;
  c.finding.rule = rule;
  c.finding.level = s;
  c.finding.message = rule + " message \xff\x1b";
  c.finding.location = {"/etc/nginx/nginx.conf", line, 5};
  c.result = v;
  c.reason = "because " + rule;
  c.evidence.push_back({"TLSv1.3 resumed", "0/20", "127.0.0.1:443"});
  return c;
}

report::check_report sample(std::size_t n) {
  report::check_report r;
  r.lint.inputs = {"/etc/nginx/nginx.conf"};
  r.lint.assumed.nginx_source = "--nginx-version";
  r.lint.dropped_findings = {{"weak-ciphers", 3}};
  r.lint.files_read = 2;
  const check::verdict verdicts[] = {check::verdict::confirmed, check::verdict::refuted,
                                     check::verdict::not_testable};
  for (std::size_t i = 0; i < n; ++i) {
    auto c = checked(i % 2 ? "weak-ciphers" : "tls13-resumption-disabled",
                     i % 3 ? engine::severity::warning : engine::severity::error, verdicts[i % 3],
                     static_cast<std::uint32_t>(i + 1));
    if (i % 4 == 0) {
      c.finding.fix = "ssl_ciphers HIGH;\n";
      c.finding.server = "a.example";
      c.finding.also_at = {{"/etc/nginx/b.conf", 4, 1}};
      c.finding.include_chain = {{"/etc/nginx/nginx.conf", 9, 3}};
      c.finding.facts.push_back({"ssl_ciphers", "ALL", "set", source_location{"/x", 2, 3}});
    }
    if (i % 5 == 1) c.evidence.clear();
    r.lint.findings.push_back(c.finding);
    r.checked.push_back(c);
  }
  return r;
}

}  // namespace

TEST_CASE("check JSON streamed is the lint record patched with the verdicts") {
  for (std::size_t n : {0u, 1u, 7u, 70u}) {
    CAPTURE(n);
    auto r = sample(n);
    CHECK(report::render_check_json(r) == check_json_reference(r));
    r.notes = {"note one", "note \x1b two"};
    r.errors = {"nginx -t rejects the config"};
    r.key_names = {"k: current.key"};
    report::sandbox_summary sb;
    sb.nginx_binary = "/usr/sbin/nginx";
    sb.sockets = {{"*:443", "127.0.0.1:40001"}};
    sb.notes = {{"", "whole"}};
    sb.untested = {{"b.example", "why"}};
    r.sandbox = sb;
    report::nginx_test_summary rejected;  // field by field: see test_check_judge's warning()
    rejected.verdict = "rejected";
    rejected.where = source_location{"/etc/nginx/nginx.conf", 3, 2};
    rejected.message = "m";
    r.nginx_test = rejected;
    CHECK(report::render_check_json(r) == check_json_reference(r));
    r.nginx_test->where = {};
    CHECK(report::render_check_json(r) == check_json_reference(r));
  }
}

TEST_CASE("check SARIF streamed is the lint log patched with the verdicts") {
  for (std::size_t n : {0u, 1u, 7u, 70u}) {
    CAPTURE(n);
    auto r = sample(n);
    CHECK(report::render_check_sarif(r, "/etc") == check_sarif_reference(r, "/etc"));
    CHECK(report::render_check_sarif(r, "") == check_sarif_reference(r, ""));
    r.notes = {"n"};
    r.errors = {"e"};
    report::sandbox_summary sb;
    sb.reload = true;
    r.sandbox = sb;
    r.nginx_test = report::nginx_test_summary{"passed", {}, "", ""};
    CHECK(report::render_check_sarif(r, "/etc") == check_sarif_reference(r, "/etc"));
  }
}

TEST_CASE("the registry names each format once and serves the commands' formats") {
  std::set<std::string> names;
  for (const auto* f : report::formats()) CHECK(names.insert(std::string(f->name)).second);
  using report::command;
  CHECK(report::format_names(command::lint) == std::vector<std::string>{"text", "json", "sarif",
                                                                        "github", "gitlab", "junit",
                                                                        "checkstyle"});
  CHECK(report::format_names(command::check) == std::vector<std::string>{"text", "json", "sarif"});
  CHECK(report::format_names(command::probe) ==
        std::vector<std::string>{"text", "json", "prometheus"});
  CHECK(report::format_names(command::parse) == std::vector<std::string>{"json", "crossplane"});
  CHECK(report::format_names(command::harden) == std::vector<std::string>{"text", "json"});
  CHECK(&report::format_for(command::lint, "sarif") == report::formats()[2]);
  CHECK_THROWS_AS(report::format_for(command::lint, "prometheus"), usage_error);
  CHECK_THROWS_AS(report::format_for(command::check, "csv"), usage_error);
  CHECK(report::format_for(command::parse, "crossplane").parse_error);
  CHECK_FALSE(report::format_for(command::parse, "json").parse_error);
}

namespace {

// What project_path answers, by std::filesystem alone (its definition): the normal absolute
// path, relative to the normal root when under it.
std::string project_path_by_filesystem(const std::string& file, const std::string& root) {
  namespace fs = std::filesystem;
  const fs::path abs = fs::absolute(file).lexically_normal();
  if (!root.empty()) {
    const fs::path rel = abs.lexically_relative(fs::path(root).lexically_normal());
    if (!rel.empty() && rel.native().rfind("..", 0) != 0) return rel.generic_string();
  }
  return abs.generic_string();
}

}  // namespace

TEST_CASE("project_path: relative under the project root, absolute outside it") {
  CHECK(report::project_path("/srv/app/nginx.conf", "/srv/app") == "nginx.conf");
  CHECK(report::project_path("/srv/app/conf.d/a.conf", "/srv/app") == "conf.d/a.conf");
  CHECK(report::project_path("/srv/application/x.conf", "/srv/app") == "/srv/application/x.conf");
  CHECK(report::project_path("/srv/app", "/srv/app") == ".");
  CHECK(report::project_path("/etc/nginx/x.conf", "/srv/app") == "/etc/nginx/x.conf");
  CHECK(report::project_path("/srv/app/./x.conf", "/srv/app") == "x.conf");
  CHECK(report::project_path("/srv/app//x.conf", "/srv/app") == "x.conf");
  CHECK(report::project_path("/srv/app/sub/../x.conf", "/srv/app") == "x.conf");
  CHECK(report::project_path("/srv/app/x.conf", "/srv/app/") == "x.conf");
  CHECK(report::project_path("/srv/app/x.conf", "") == "/srv/app/x.conf");
  CHECK(report::project_path("/x.conf", "/") == "x.conf");
  CHECK(report::project_path("", "/srv/app") == "");
  // Every pairing of these files and roots answers as std::filesystem does.
  const std::vector<std::string> files = {"/srv/app/a.conf",    "/srv/app/b/c.conf",
                                          "/srv/app/../app/a",  "/srv/appx/a.conf",
                                          "/srv/a.conf",        "/srv/app",
                                          "/srv/app/",          "/srv/app/b/./c",
                                          "/srv//app/a.conf",   "/srv/app/..",
                                          "/srv/app/.hidden/a", "/srv/app/..x/a",
                                          "relative/a.conf",    "/"};
  const std::vector<std::string> roots = {"",          "/",          "/srv",      "/srv/app",
                                          "/srv/app/", "/srv/./app", "/srv/appx", "/other"};
  for (const auto& f : files)
    for (const auto& r : roots) {
      CAPTURE(f);
      CAPTURE(r);
      CHECK(report::project_path(f, r) == project_path_by_filesystem(f, r));
    }
}

TEST_CASE("append_json_string escapes as nlohmann::json dumps") {
  auto by_nlohmann = [](const std::string& text) {
    return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
  };
  std::vector<std::string> texts = {"",
                                    "plain",
                                    "two\nlines\n",
                                    "tab\tquote\" back\\slash",
                                    "\r\f\b",
                                    std::string("nul\0in", 6),
                                    "del\x7f",
                                    "caf\xc3\xa9",
                                    "bad \xff byte",
                                    "\xe2\x80\x94 dash"};
  for (int c = 0; c < 0x80; ++c) texts.push_back("a" + std::string(1, static_cast<char>(c)) + "b");
  for (const auto& t : texts) {
    CAPTURE(t);
    std::string out = "prefix:";
    report::append_json_string(out, t);
    CHECK(out == "prefix:" + by_nlohmann(t));
  }
}
