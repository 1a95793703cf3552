// Lint in CI: SARIF 2.1.0 (validated against the OASIS schema), GitHub annotations, stale
// suppressions, the .ngxtls.toml keys, and `ngxtls rules`.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "support/fixture_env.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using json = nlohmann::json;

namespace {

test::command_result run_ngxtls(std::vector<std::string> args, const std::string& input = "") {
  args.insert(args.begin(), test::ngxtls_binary());
  return test::run(args, input, 60);
}

// Runs `ngxtls` in `cwd` (SARIF paths are relative to the working directory).
test::command_result run_in(const fs::path& cwd, std::vector<std::string> args) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", cwd.string(),
                                   test::ngxtls_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run(argv, "", 60);
}

// Two findings in an included file (so a related location), one in the main file.
void write_config(test::temp_dir& tmp) {
  tmp.write("conf/nginx.conf",
            "worker_processes 4;\n"
            "events {}\n"
            "http {\n"
            "    include tls.conf;\n"
            "    server { listen 443 ssl; ssl_protocols TLSv1.2 TLSv1.3; }\n"
            "}\n");
  tmp.write("conf/tls.conf",
            "ssl_session_cache builtin;\n"
            "ssl_session_timeout 3d;\n");
}

}  // namespace

TEST_CASE(
    "SARIF output has relative URIs, the rule catalog and include chains as related "
    "locations") {
  test::temp_dir tmp;
  write_config(tmp);
  auto r = run_in(tmp.path(), {"lint", "conf/nginx.conf", "--nginx-version", "1.22.1", "--format",
                               "sarif", "-o", "out.sarif", "--fail-on", "never"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto text = test::read_file(tmp.path() / "out.sarif");
  auto log = json::parse(text);
  CHECK(log["version"] == "2.1.0");
  const auto& run = log["runs"][0];
  CHECK(run["tool"]["driver"]["name"] == "ngxtls");
  CHECK(run["tool"]["driver"]["rules"].size() >= 25);
  CHECK(run["originalUriBaseIds"]["SRCROOT"]["uri"].get<std::string>().rfind("file:///", 0) == 0);
  bool saw_chain = false, saw_worker = false;
  for (const auto& res : run["results"]) {
    const auto& loc = res["locations"][0]["physicalLocation"];
    CHECK(loc["artifactLocation"]["uriBaseId"] == "SRCROOT");
    if (res["ruleId"] == "session-cache-per-worker") {
      saw_worker = true;
      CHECK(loc["artifactLocation"]["uri"] == "conf/tls.conf");
      CHECK(loc["region"]["startLine"] == 1);
      CHECK(res["level"] == "warning");
      REQUIRE(res.contains("relatedLocations"));
      CHECK(res["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] ==
            "conf/nginx.conf");
      CHECK(res["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 4);
      saw_chain = true;
    }
  }
  CHECK(saw_worker);
  CHECK(saw_chain);
}

TEST_CASE("SARIF output validates against the OASIS SARIF 2.1.0 schema") {
  // The schema is the team's copy of OASIS's file, not part of the repository.
  const auto schema = test::shared_file("schemas/sarif-schema-2.1.0.json");
  if (!schema)
    return test::skip_test(
        "no SARIF 2.1.0 schema (set NGXTLS_SHARED_DIR to a folder with "
        "schemas/sarif-schema-2.1.0.json)");
  test::temp_dir tmp;
  write_config(tmp);
  auto r = run_in(tmp.path(), {"lint", "conf/nginx.conf", "--nginx-version", "1.22.1", "--format",
                               "sarif", "-o", "out.sarif", "--fail-on", "never"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  // The schema check runs with Debian's python3 (it has python3-jsonschema).
  tmp.write("validate.py",
            "import json, sys, jsonschema\n"
            "schema = json.load(open(sys.argv[1]))\n"
            "doc = json.load(open(sys.argv[2]))\n"
            "jsonschema.Draft7Validator(schema).validate(doc)\n"
            "print('valid')\n");
  auto v = test::run({"/usr/bin/python3", (tmp.path() / "validate.py").string(), schema->string(),
                      (tmp.path() / "out.sarif").string()},
                     "", 60);
  CHECK_MESSAGE(v.exit_code == 0, v.err);
  CHECK(v.out == "valid\n");
}

TEST_CASE("SARIF uses absolute file URIs for files outside the working directory") {
  test::temp_dir tmp, elsewhere;
  write_config(tmp);
  auto r = run_in(elsewhere.path(),
                  {"lint", (tmp.path() / "conf/nginx.conf").string(), "--nginx-version", "1.22.1",
                   "--format", "sarif", "--fail-on", "never"});
  REQUIRE(r.exit_code == 0);
  auto log = json::parse(r.out);
  for (const auto& res : log["runs"][0]["results"]) {
    const auto& art = res["locations"][0]["physicalLocation"]["artifactLocation"];
    CHECK(!art.contains("uriBaseId"));
    CHECK(art["uri"].get<std::string>().rfind("file:///", 0) == 0);
  }
}

TEST_CASE("--format github prints one workflow annotation per finding, escaped") {
  test::temp_dir tmp;
  write_config(tmp);
  auto r = run_in(tmp.path(),
                  {"lint", "conf/nginx.conf", "--nginx-version", "1.22.1", "--format", "github",
                   "--select", "session-cache-per-worker,session-timeout-too-long"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.find(
            "::warning file=conf/tls.conf,line=1,col=1,title=ngxtls session-cache-per-worker::") !=
        std::string::npos);
  CHECK(r.out.find(
            "::warning file=conf/tls.conf,line=2,col=1,title=ngxtls session-timeout-too-long::") !=
        std::string::npos);
  // Multi-line fixes are folded into one line with %0A.
  CHECK(r.out.find("%0AFix:%0A") != std::string::npos);
  std::size_t lines = 0;
  for (char c : r.out) lines += c == '\n';
  CHECK(lines == 2);
}

TEST_CASE("a suppression that silences nothing is reported as a note, one that works is not") {
  test::temp_dir tmp;
  auto conf =
      tmp.write("nginx.conf",
                "worker_processes 4;\n"
                "events {}\n"
                "http {\n"
                "    # ngxtls: ignore session-cache-per-worker -- clients are pinned by the LB\n"
                "    ssl_session_cache builtin;\n"
                "    ssl_session_timeout 1h;  # ngxtls: ignore session-timeout-too-long -- stale\n"
                "    # ngxtls: ignore no-such-rule\n"
                "    server { listen 443 ssl; ssl_protocols TLSv1.2 TLSv1.3; }\n"
                "}\n")
          .string();
  auto r = run_ngxtls(
      {"lint", conf, "--nginx-version", "1.22.1", "--format", "json", "--fail-on", "never"});
  REQUIRE(r.exit_code == 0);
  auto out = json::parse(r.out);
  std::vector<std::pair<int, std::string>> unused;
  for (const auto& f : out["findings"]) {
    CHECK(f["rule"] != "session-cache-per-worker");  // suppressed
    if (f["rule"] == "unused-suppression") {
      CHECK(f["severity"] == "note");
      unused.emplace_back(f["location"]["line"].get<int>(), f["message"].get<std::string>());
    }
  }
  REQUIRE(unused.size() == 2);
  CHECK(unused[0].first == 6);
  CHECK(unused[0].second.find("session-timeout-too-long matches no finding") != std::string::npos);
  CHECK(unused[1].first == 7);
  CHECK(unused[1].second.find("names no rule \"no-such-rule\"") != std::string::npos);
  // A suppression for a rule that did not run is not stale.
  auto sel = run_ngxtls({"lint", conf, "--nginx-version", "1.22.1", "--format", "json", "--fail-on",
                         "never", "--select", "unused-suppression,session-cache-per-worker"});
  auto sel_out = json::parse(sel.out);
  std::size_t n = 0;
  for (const auto& f : sel_out["findings"]) n += f["rule"] == "unused-suppression";
  CHECK(n == 1);  // only the unknown rule id
}

TEST_CASE(
    ".ngxtls.toml sets the expiry window, the expected load and built-in modules and rejects "
    "unknown keys") {
  test::temp_dir tmp;
  test::make_fixture_material(tmp.path());
  test::make_certificate_material(tmp.path());
  auto conf = tmp.write("nginx.conf",
                        "events {}\n"
                        "http {\n"
                        "    ssl_session_cache shared:SSL:1m;\n"
                        "    ssl_session_timeout 1h;\n"
                        "    more_set_headers \"Server: x\";\n"
                        "    server { listen 443 ssl; ssl_protocols TLSv1.2 TLSv1.3;\n"
                        "             ssl_certificate pki/expiring/chain.pem; ssl_certificate_key "
                        "pki/expiring/leaf.key; }\n"
                        "}\n")
                  .string();
  auto rules_of = [&](const std::string& toml) {
    tmp.write(".ngxtls.toml", toml);
    auto r = run_in(tmp.path(), {"lint", conf, "--format", "json", "--fail-on", "never", "--select",
                                 "certificate-expiry,session-cache-too-small,unknown-directive"});
    std::multiset<std::string> out;
    if (r.exit_code != 0) {
      out.insert("exit " + std::to_string(r.exit_code) + ": " + r.err);
      return out;
    }
    const auto doc = json::parse(r.out);  // named: a temporary would die before the loop
    for (const auto& f : doc["findings"]) out.insert(f["rule"].get<std::string>());
    return out;
  };
  auto base = rules_of("nginx_version = \"1.22.1\"\n");
  CHECK(base.count("certificate-expiry") == 1);  // 10 days left, default window 30
  CHECK(base.count("session-cache-too-small") == 0);
  CHECK(base.count("unknown-directive") == 1);  // headers-more not loaded
  auto tuned = rules_of(
      "nginx_version = \"1.22.1\"\nexpiry_days = 5\nmodules = [\"headers-more\"]\n"
      "[load]\nnew_sessions_per_second = 100\n");
  CHECK(tuned.count("certificate-expiry") == 0);
  CHECK(tuned.count("session-cache-too-small") == 1);
  CHECK(tuned.count("unknown-directive") == 0);
  auto bad = rules_of("[load]\nnew_session_rate = 3\n");
  REQUIRE(bad.size() == 1);
  CHECK(bad.begin()->find("exit 2") == 0);
  CHECK(bad.begin()->find("unknown key \"load.new_session_rate\"") != std::string::npos);
  CHECK(bad.begin()->find(".ngxtls.toml:2") != std::string::npos);
}

TEST_CASE("ngxtls rules lists the catalog, prints one doc, and writes docs/rules") {
  auto list = run_ngxtls({"rules"});
  CHECK(list.exit_code == 0);
  CHECK(list.out.find("weak-ciphers  (warning)") != std::string::npos);
  auto one = run_ngxtls({"rules", "cross-server-resumption"});
  CHECK(one.out.find("## How the prober confirms it") != std::string::npos);
  test::temp_dir tmp;
  auto w = run_ngxtls({"rules", "--write-docs", (tmp.path() / "rules").string()});
  CHECK(w.exit_code == 0);
  CHECK(fs::exists(tmp.path() / "rules/README.md"));
  CHECK(test::read_file(tmp.path() / "rules/weak-ciphers.md") ==
        test::read_file(test::source_dir() / "docs/rules/weak-ciphers.md"));
}

TEST_CASE(
    "rules --write-docs replaces a symlink planted at a page's name, never writes through it") {
  test::temp_dir tmp;
  const fs::path dir = tmp.path() / "rules";
  fs::create_directories(dir);
  const fs::path victim = tmp.path() / "victim.txt";
  std::ofstream(victim) << "not a rule page\n";
  fs::create_symlink(victim, dir / "weak-ciphers.md");
  fs::create_symlink(victim, dir / "README.md");
  auto w = run_ngxtls({"rules", "--write-docs", dir.string()});
  CHECK(w.exit_code == 0);
  CHECK(test::read_file(victim) == "not a rule page\n");
  CHECK(!fs::is_symlink(dir / "weak-ciphers.md"));
  CHECK(test::read_file(dir / "weak-ciphers.md") ==
        test::read_file(test::source_dir() / "docs/rules/weak-ciphers.md"));
  CHECK(!fs::is_symlink(dir / "README.md"));
}
