// `check` runs lint's pipeline: on the same config and .ngxtls.toml (ignore, a severity
// override, expiry_days, a pinned nginx version) it reports the findings `lint` reports, found
// from the working directory or named with --config.

#include <doctest/doctest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

#include "support/fixture_env.hpp"
#include "support/process.hpp"

using namespace ngxtls;
using json = nlohmann::json;

namespace {

// (rule, file, line, severity) of each finding of a lint or check JSON report.
using row = std::tuple<std::string, std::string, int, std::string>;

std::set<row> rows(const json& doc) {
  std::set<row> out;
  for (const auto& f : doc["findings"])
    out.insert({f["rule"].get<std::string>(), f["location"]["file"].get<std::string>(),
                f["location"]["line"].get<int>(), f["severity"].get<std::string>()});
  return out;
}

// Runs ngxtls with `args` in `dir` (where it looks for .ngxtls.toml) and parses its JSON.
json run_json(const std::filesystem::path& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv{test::ngxtls_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string where = dir.string();
  auto r = test::run(argv, "", 120, [&] { return ::chdir(where.c_str()) == 0; });
  INFO("argv: " << argv[1] << " stderr: " << r.err);
  REQUIRE((r.exit_code == 0 || r.exit_code == 1));
  REQUIRE(!r.out.empty());
  return json::parse(r.out);
}

// A config with three findings the project file changes: TLS 1.3 without tickets or cache
// (tls13-resumption-disabled, an error: ignored), TLSv1 (legacy-protocols: raised to error),
// and a certificate valid for 365 days (certificate-expiry only within 400 days).
struct project {
  test::temp_dir dir;
  std::string conf;
  project() {
    test::make_certificate_material(dir.path());
    conf = dir.write("site/nginx.conf",
                     "events {}\n"
                     "http {\n"
                     "    ssl_session_tickets off;\n"
                     "    server {\n"
                     "        listen 443 ssl;\n"
                     "        server_name example.test;\n"
                     "        ssl_certificate " +
                         (dir.path() / "pki/named/chain.pem").string() +
                         ";\n"
                         "        ssl_certificate_key " +
                         (dir.path() / "pki/named/leaf.key").string() +
                         ";\n"
                         "        ssl_protocols TLSv1 TLSv1.2 TLSv1.3;\n"
                         "    }\n"
                         "}\n")
               .string();
    dir.write("site/.ngxtls.toml",
              "nginx_version = \"1.22.1\"\n"
              "ignore = [\"tls13-resumption-disabled\"]\n"
              "expiry_days = 400\n"
              "[severity]\n"
              "legacy-protocols = \"error\"\n");
  }
};

const std::vector<std::string> sandbox_args = {
    "--sandbox", "--tls1.3", "-n", "2", "--no-ocsp", "--fail-on", "never", "--format", "json"};

}  // namespace

TEST_CASE("check honours .ngxtls.toml as lint does: the same (rule, file, line, severity) set") {
  project p;
  const auto site = p.dir.path() / "site";
  const json lint = run_json(site, {"lint", p.conf, "--format", "json", "--fail-on", "never"});
  const std::set<row> want = rows(lint);
  // What the project file says, worked out from it rather than taken from lint's answer.
  std::set<std::string> rules;
  for (const auto& [rule, file, line, sev] : want) {
    rules.insert(rule);
    if (rule == "legacy-protocols") CHECK(sev == "error");
  }
  CHECK(rules.count("tls13-resumption-disabled") == 0);
  CHECK(rules.count("legacy-protocols") == 1);
  CHECK(rules.count("certificate-expiry") == 1);
  CHECK(lint["assumed"]["nginx_source"].get<std::string>().find(".ngxtls.toml") !=
        std::string::npos);

  SUBCASE("found from the working directory") {
    std::vector<std::string> args{"check", p.conf};
    args.insert(args.end(), sandbox_args.begin(), sandbox_args.end());
    const json check = run_json(site, args);
    CHECK(rows(check) == want);
    CHECK(check["assumed"]["nginx"] == lint["assumed"]["nginx"]);
    CHECK(check["project_config"] == lint["project_config"]);
  }
  SUBCASE("named with --config from elsewhere") {
    std::vector<std::string> args{"check", p.conf, "--config", (site / ".ngxtls.toml").string()};
    args.insert(args.end(), sandbox_args.begin(), sandbox_args.end());
    const json check = run_json(p.dir.path(), args);
    CHECK(rows(check) == want);
  }
}
