// Code scanning that keeps its alerts: one SARIF result per place, partialFingerprints that
// survive moved lines, paths relative to the repository root (%SRCROOT%, --project-root), the
// rule metadata code scanning shows, the SARIF 2.1.0 schema and the SARIF Multitool's GitHub
// ingestion rules, and the findings baseline (--baseline-report).

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "rules/security.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using json = nlohmann::json;

namespace {

// Runs ngxtls in `cwd`.
test::command_result run_in(const fs::path& cwd, std::vector<std::string> args) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", cwd.string(),
                                   test::ngxtls_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run(argv, "", 120);
}

// A repository with its nginx config in nginx/: two servers in two site files with the same
// per-worker session cache (one cause, two places) and a long session timeout in one.
void write_repo(const test::temp_dir& repo, const std::string& header = "") {
  REQUIRE(test::run({"git", "init", "-q", repo.path().string()}, "", 30).exit_code == 0);
  repo.write("nginx/nginx.conf", header +
                                     "worker_processes 4;\n"
                                     "events {}\n"
                                     "http {\n"
                                     "    include sites/*.conf;\n"
                                     "}\n");
  repo.write("nginx/sites/a.conf", header +
                                       "server {\n"
                                       "    listen 443 ssl;\n"
                                       "    server_name a.example;\n"
                                       "    ssl_session_cache builtin;\n"
                                       "    ssl_session_timeout 3d;\n"
                                       "}\n");
  repo.write("nginx/sites/b.conf", header +
                                       "server {\n"
                                       "    listen 8443 ssl;\n"
                                       "    server_name b.example;\n"
                                       "    ssl_session_cache builtin;\n"
                                       "}\n");
}

json lint_sarif(const fs::path& cwd, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"lint",
                                   "nginx.conf",
                                   "--nginx-version",
                                   "1.22.1",
                                   "--format",
                                   "sarif",
                                   "--select",
                                   "session-cache-per-worker,session-timeout-too-long",
                                   "--fail-on",
                                   "never"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_in(cwd, args);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return json::parse(r.out);
}

// uri -> fingerprint of every result of `rule`.
std::map<std::string, std::string> fingerprints(const json& log, const std::string& rule) {
  std::map<std::string, std::string> out;
  for (const auto& res : log["runs"][0]["results"]) {
    if (res["ruleId"] != rule) continue;
    const std::string uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"];
    REQUIRE(res.contains("partialFingerprints"));
    out[uri] = res["partialFingerprints"]["ngxtlsPlace/v1"];
  }
  return out;
}

}  // namespace

TEST_CASE("SARIF has one result per place of a finding repeated in two files") {
  test::temp_dir repo;
  write_repo(repo);
  const json log = lint_sarif(repo.path() / "nginx");
  std::set<std::string> places;
  for (const auto& res : log["runs"][0]["results"]) {
    if (res["ruleId"] != "session-cache-per-worker") continue;
    REQUIRE(res["locations"].size() == 1);
    const auto& loc = res["locations"][0]["physicalLocation"];
    places.insert(loc["artifactLocation"]["uri"].get<std::string>() + ":" +
                  std::to_string(loc["region"]["startLine"].get<int>()));
    CHECK_FALSE(res.contains("occurrenceCount"));
  }
  // Line 4 of each site file: `ssl_session_cache builtin;`.
  CHECK(places == std::set<std::string>{"nginx/sites/a.conf:4", "nginx/sites/b.conf:4"});

  // GitHub annotations likewise: one per place.
  auto gh = run_in(repo.path() / "nginx",
                   {"lint", "nginx.conf", "--nginx-version", "1.22.1", "--format", "github",
                    "--select", "session-cache-per-worker", "--fail-on", "never"});
  CHECK(gh.out.find("::warning file=nginx/sites/a.conf,line=4,col=5,") != std::string::npos);
  CHECK(gh.out.find("::warning file=nginx/sites/b.conf,line=4,col=5,") != std::string::npos);
}

TEST_CASE("SARIF paths are relative to the git root from a subdirectory, or to --project-root") {
  test::temp_dir repo;
  write_repo(repo);
  const json log = lint_sarif(repo.path() / "nginx");
  const auto& run = log["runs"][0];
  const std::string root = "file://" + fs::canonical(repo.path()).string() + "/";
  CHECK(run["originalUriBaseIds"]["SRCROOT"]["uri"] == root);
  std::set<std::string> uris;
  for (const auto& res : run["results"]) {
    const auto& art = res["locations"][0]["physicalLocation"]["artifactLocation"];
    CHECK(art["uriBaseId"] == "SRCROOT");
    uris.insert(art["uri"]);
  }
  CHECK(uris.count("nginx/sites/a.conf") == 1);
  // An include chain's places are repository paths too.
  for (const auto& res : run["results"])
    for (const auto& rel : res.value("relatedLocations", json::array()))
      CHECK(rel["physicalLocation"]["artifactLocation"]["uri"] == "nginx/nginx.conf");

  // --project-root overrides the git root.
  const json own = lint_sarif(repo.path() / "nginx", {"--project-root", "."});
  for (const auto& res : own["runs"][0]["results"])
    CHECK(
        res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].get<std::string>().rfind(
            "sites/", 0) == 0);
  auto bad = run_in(repo.path(), {"lint", "nginx/nginx.conf", "--project-root", "no/such/dir"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--project-root no/such/dir: not a directory") != std::string::npos);
}

TEST_CASE("partialFingerprints survive moved lines and tell places and causes apart") {
  test::temp_dir before, after;
  write_repo(before);
  // The same config with three comment lines above everything: every line moved.
  write_repo(after, "# moved\n# by\n# three lines\n");
  const json a = lint_sarif(before.path() / "nginx");
  const json b = lint_sarif(after.path() / "nginx");
  const auto fa = fingerprints(a, "session-cache-per-worker");
  const auto fb = fingerprints(b, "session-cache-per-worker");
  REQUIRE(fa.size() == 2);
  CHECK(fa == fb);
  // The two places differ, and so do two rules at one server.
  CHECK(fa.at("nginx/sites/a.conf") != fa.at("nginx/sites/b.conf"));
  CHECK(fingerprints(a, "session-timeout-too-long").at("nginx/sites/a.conf") !=
        fa.at("nginx/sites/a.conf"));
  // Editing the directive itself makes it another alert.
  before.write("nginx/sites/a.conf",
               "server {\n    listen 443 ssl;\n    server_name a.example;\n"
               "    ssl_session_cache builtin:1000;\n    ssl_session_timeout 3d;\n}\n");
  const auto fc = fingerprints(lint_sarif(before.path() / "nginx"), "session-cache-per-worker");
  CHECK(fc.at("nginx/sites/a.conf") != fa.at("nginx/sites/a.conf"));
  CHECK(fc.at("nginx/sites/b.conf") == fa.at("nginx/sites/b.conf"));
}

TEST_CASE("SARIF rules carry the metadata code scanning shows") {
  test::temp_dir repo;
  write_repo(repo);
  const json log = lint_sarif(repo.path() / "nginx");
  const auto& rules = log["runs"][0]["tool"]["driver"]["rules"];
  REQUIRE(rules.size() >= 25);
  std::map<std::string, json> by_id;
  for (const auto& r : rules) by_id[r["id"]] = r;
  for (const auto& [id, r] : by_id) {
    CAPTURE(id);
    CHECK(r["name"] != r["id"]);
    CHECK(r["name"].get<std::string>().find('-') == std::string::npos);
    CHECK_FALSE(r["shortDescription"]["text"].get<std::string>().empty());
    CHECK_FALSE(r["fullDescription"]["text"].get<std::string>().empty());
    CHECK(r["help"]["markdown"].get<std::string>().find("## ") != std::string::npos);
    CHECK(r["help"]["text"].get<std::string>().find("## ") == std::string::npos);
    CHECK(r["helpUri"] == "https://github.com/ngxtls/ngxtls/blob/main/docs/rules/" + id + ".md");
    CHECK(r["defaultConfiguration"].contains("level"));
    const auto& tags = r["properties"]["tags"];
    const bool security = std::find(tags.begin(), tags.end(), "security") != tags.end();
    CHECK(security == r["properties"].contains("security-severity"));
    if (security) {
      const double score = std::stod(r["properties"]["security-severity"].get<std::string>());
      CHECK(score > 0.0);
      CHECK(score <= 10.0);
    }
  }
  CHECK(by_id.at("tls13-resumption-disabled")["name"] == "Tls13ResumptionDisabled");
  // Weak ciphers let an attacker read traffic: high (7.0 and up); a resumption loss is no
  // security alert.
  CHECK(std::stod(by_id.at("weak-ciphers")["properties"]["security-severity"].get<std::string>()) >=
        7.0);
  CHECK_FALSE(by_id.at("tls13-resumption-disabled")["properties"].contains("security-severity"));
  // Every rule the security table scores is in the catalog, and scored in the SARIF.
  for (const auto id : rules::security_rule_ids()) {
    CAPTURE(id);
    REQUIRE(by_id.count(std::string(id)) == 1);
    CHECK(by_id.at(std::string(id))["properties"].contains("security-severity"));
  }
}

TEST_CASE(
    "SARIF from a subdirectory passes the SARIF 2.1.0 schema and the Multitool's GitHub rules") {
  test::temp_dir repo;
  write_repo(repo);
  auto r =
      run_in(repo.path() / "nginx", {"lint", "nginx.conf", "--nginx-version", "1.22.1", "--format",
                                     "sarif", "-o", "../out.sarif", "--fail-on", "never"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const fs::path sarif = repo.path() / "out.sarif";
  if (const auto schema = test::shared_file("schemas/sarif-schema-2.1.0.json")) {
    repo.write("validate.py",
               "import json, sys, jsonschema\n"
               "jsonschema.Draft7Validator(json.load(open(sys.argv[1]))).validate("
               "json.load(open(sys.argv[2])))\n"
               "print('valid')\n");
    auto v = test::run({"/usr/bin/python3", (repo.path() / "validate.py").string(),
                        schema->string(), sarif.string()},
                       "", 60);
    CHECK_MESSAGE(v.out == "valid\n", v.err);
  }
  // Microsoft's SARIF Multitool (npm @microsoft/sarif-multitool; scripts/install-deps.sh puts
  // it here): its GitHub ingestion rules (GH1001...) and SARIF rules, errors and warnings.
  const fs::path multitool =
      "/opt/ngxtls-tools/sarif-multitool/node_modules/@microsoft/"
      "sarif-multitool-linux/Sarif.Multitool";
  if (!fs::exists(multitool))
    return test::skip_test("no SARIF Multitool at " + multitool.string() +
                           " (scripts/install-deps.sh installs it with npm)");
  const fs::path out = repo.path() / "validation.sarif";
  auto v = test::run({multitool.string(), "validate", "--rule-kind", "Gh;Ghas;Sarif", "--level",
                      "Error;Warning", "-o", out.string(), sarif.string()},
                     "", 300);
  INFO(v.out << v.err);
  REQUIRE(fs::exists(out));
  const json report = json::parse(test::read_file(out));
  std::vector<std::string> problems;
  for (const auto& run : report["runs"])
    for (const auto& res : run.value("results", json::array()))
      problems.push_back(res.value("ruleId", std::string("?")) + " " +
                         res.value("level", std::string("warning")) + ": " +
                         res["message"].value("text", std::string()) +
                         res["message"].value("id", std::string()));
  CHECK_MESSAGE(problems.empty(), nlohmann::json(problems).dump(2));
}

TEST_CASE(
    "--baseline-report fails only on findings not in the previous report, and counts the rest") {
  test::temp_dir repo;
  write_repo(repo);
  const fs::path dir = repo.path() / "nginx";
  const std::vector<std::string> base = {
      "lint",   "nginx.conf", "--nginx-version",
      "1.22.1", "--select",   "session-cache-per-worker,session-timeout-too-long"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_in(dir, args);
  };
  REQUIRE(with({"--format", "sarif", "-o", "../previous.sarif", "--fail-on", "never"}).exit_code ==
          0);
  REQUIRE(with({"--format", "json", "-o", "../previous.json", "--fail-on", "never"}).exit_code ==
          0);
  // Nothing changed: all three places suppressed, exit 0 although they are warnings.
  for (const char* previous : {"../previous.sarif", "../previous.json"}) {
    CAPTURE(previous);
    auto same = with({"--baseline-report", previous});
    CHECK(same.exit_code == 0);
    CHECK(same.err.find("3 findings suppressed by --baseline-report " + std::string(previous)) !=
          std::string::npos);
    CHECK(same.out.find("0 errors, 0 warnings, 0 notes") != std::string::npos);
  }
  // Lines moved and a new finding in a third site file: only the new one is reported.
  repo.write("nginx/sites/a.conf",
             "# a comment moves every line\n"
             "server {\n    listen 443 ssl;\n    server_name a.example;\n"
             "    ssl_session_cache builtin;\n    ssl_session_timeout 3d;\n}\n");
  repo.write("nginx/sites/c.conf",
             "server {\n    listen 9443 ssl;\n    server_name c.example;\n"
             "    ssl_session_cache builtin;\n}\n");
  auto fresh = with({"--baseline-report", "../previous.sarif", "--format", "sarif"});
  CHECK(fresh.exit_code == 1);
  CHECK(fresh.err.find("3 findings suppressed") != std::string::npos);
  const json log = json::parse(fresh.out);
  const auto& results = log["runs"][0]["results"];
  REQUIRE(results.size() == 1);
  CHECK(results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] ==
        "nginx/sites/c.conf");
  CHECK(log["runs"][0]["properties"]["baseline_report"]["suppressed"] == 3);

  // Not a report: exit 2 naming the file.
  repo.write("nginx/not-a-report.json", "[1, 2]");
  auto bad = with({"--baseline-report", "not-a-report.json"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("not-a-report.json") != std::string::npos);
  CHECK(bad.err.find("--baseline-report") != std::string::npos);
}

TEST_CASE("a SARIF report given to the config --baseline points at --baseline-report") {
  test::temp_dir repo;
  write_repo(repo);
  const fs::path dir = repo.path() / "nginx";
  REQUIRE(run_in(dir, {"lint", "nginx.conf", "--nginx-version", "1.22.1", "--format", "sarif", "-o",
                       "old.sarif", "--fail-on", "never"})
              .exit_code == 0);
  auto r =
      run_in(dir, {"lint", "nginx.conf", "--nginx-version", "1.22.1", "--baseline", "old.sarif"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--baseline old.sarif: this is a SARIF report, not an nginx config") !=
        std::string::npos);
  CHECK(r.err.find("use --baseline-report old.sarif") != std::string::npos);
}
