// One cause, reported once: missing certificate/key files as one summary per run, and identical
// findings of many servers as one finding with every place in text and JSON, one result per
// place in SARIF.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/process.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

// Five TLS servers on one socket with nginx 1.22.1's defaults (no TLS 1.3: one tls13-missing
// cause in five servers); their certificates are not on this machine: /nope/a.* named once,
// /nope/b.* by four servers, so 4 files and 4 directives (each file counted at its first
// directive).
constexpr const char* five_servers = R"(events {}
http {
    server { listen 443 ssl; server_name a.test; ssl_certificate /nope/a.pem; ssl_certificate_key /nope/a.key; }
    server { listen 443 ssl; server_name b.test; ssl_certificate /nope/b.pem; ssl_certificate_key /nope/b.key; }
    server { listen 443 ssl; server_name c.test; ssl_certificate /nope/b.pem; ssl_certificate_key /nope/b.key; }
    server { listen 443 ssl; server_name d.test; ssl_certificate /nope/b.pem; ssl_certificate_key /nope/b.key; }
    server { listen 443 ssl; server_name e.test; ssl_certificate /nope/b.pem; ssl_certificate_key /nope/b.key; }
}
)";

// Five servers, each the default server of its own socket: before nginx 1.29.2 a name-based
// server takes its default server's ssl_protocols, so only defaults get their own finding.
constexpr const char* five_sockets = R"(events {}
http {
    server { listen 441 ssl; server_name a.test; ssl_certificate /nope/a.pem; ssl_certificate_key /nope/a.key; }
    server { listen 442 ssl; server_name b.test; ssl_certificate /nope/b.pem; ssl_certificate_key /nope/b.key; }
    server { listen 443 ssl; server_name c.test; ssl_certificate /nope/b.pem; ssl_certificate_key /nope/b.key; }
    server { listen 444 ssl; server_name d.test; ssl_certificate /nope/b.pem; ssl_certificate_key /nope/b.key; }
    server { listen 445 ssl; server_name e.test; ssl_certificate /nope/b.pem; ssl_certificate_key /nope/b.key; }
}
)";

command_result lint(const std::string& conf, std::vector<std::string> extra) {
  std::vector<std::string> argv{ngxtls_binary(), "lint", "--nginx-version", "1.22.1"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(conf);
  return run(argv, "", 60);
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("missing certificate and key files are one summary note listing every file") {
  temp_dir d;
  const std::string conf = d.write("nginx.conf", five_servers).string();
  auto text = lint(conf, {"--select", "file-not-inspected"});
  INFO(text.out << text.err);
  CHECK(occurrences(text.out, "[file-not-inspected]") == 1);
  CHECK(text.out.find(":3:50: note [file-not-inspected] 4 certificate/key files not on this "
                      "machine: certificate checks skipped; --strict-files to fail") !=
        std::string::npos);
  CHECK(text.exit_code == 0);

  auto json = lint(conf, {"--select", "file-not-inspected", "--format", "json"});
  const auto report = nlohmann::json::parse(json.out);
  REQUIRE(report["findings"].size() == 1);
  const auto& f = report["findings"][0];
  CHECK(f["count"] == 4);
  REQUIRE(f["evidence"].size() == 4);
  CHECK(f["evidence"][0]["value"] == "/nope/a.pem");
  CHECK(f["evidence"][1]["value"] == "/nope/a.key");
  CHECK(f["evidence"][2]["value"] == "/nope/b.pem");
  CHECK(f["evidence"][3]["value"] == "/nope/b.key");
  CHECK(f["evidence"][3]["origin"] == "missing");
  REQUIRE(f["locations"].size() == 4);
  CHECK(f["locations"][3]["line"] == 4);
  CHECK(f["locations"][3]["column"] == 79);

  auto sarif = lint(conf, {"--select", "file-not-inspected", "--format", "sarif"});
  const auto log = nlohmann::json::parse(sarif.out);
  // Code scanning keeps one alert per result at its one location: one result per place.
  const auto& results = log["runs"][0]["results"];
  REQUIRE(results.size() == 4);
  CHECK(results[3]["locations"][0]["physicalLocation"]["region"]["startLine"] == 4);
  CHECK(results[3]["locations"][0]["physicalLocation"]["region"]["startColumn"] == 79);
  CHECK(results[0]["properties"]["places"] == 4);
  CHECK_FALSE(results[0].contains("occurrenceCount"));
  // Each place's result carries the file named there, not all four: a CI config of 25,000
  // missing files made a log of 25,000 results each listing 25,000 files (130 GB).
  const std::vector<std::string> named = {"/nope/a.pem", "/nope/a.key", "/nope/b.pem",
                                          "/nope/b.key"};
  for (std::size_t i = 0; i < results.size(); ++i) {
    CAPTURE(i);
    const auto& ev = results[i]["properties"]["evidence"];
    REQUIRE(ev.size() == 1);
    CHECK(ev[0]["value"] == named[i]);
    CHECK(ev[0]["origin"] == "missing");
    const auto& region = results[i]["locations"][0]["physicalLocation"]["region"];
    CHECK(ev[0]["location"].get<std::string>().ends_with(
        ":" + std::to_string(region["startLine"].get<int>()) + ":" +
        std::to_string(region["startColumn"].get<int>())));
  }

  // --strict-files: each directive is an error of its own (nginx stops at the first).
  auto strict = lint(conf, {"--select", "file-not-inspected", "--strict-files"});
  CHECK(occurrences(strict.out, "error [file-not-inspected]") == 4);
  CHECK(strict.exit_code == 1);
}

TEST_CASE("one cause in many servers is reported once with every place") {
  temp_dir d;
  const std::string conf = d.write("nginx.conf", five_sockets).string();
  auto text = lint(conf, {"--select", "tls13-missing"});
  INFO(text.out);
  CHECK(occurrences(text.out, "[tls13-missing]") == 1);
  CHECK(text.out.find("also at " + conf + ":4:14, " + conf + ":5:14, " + conf +
                      ":6:14 and 1 more (5 places; every one in JSON and SARIF)") !=
        std::string::npos);
  CHECK(text.out.find("0 errors, 1 warning, 0 notes") != std::string::npos);

  const auto report =
      nlohmann::json::parse(lint(conf, {"--select", "tls13-missing", "--format", "json"}).out);
  REQUIRE(report["findings"].size() == 1);
  CHECK(report["findings"][0]["count"] == 5);
  REQUIRE(report["findings"][0]["locations"].size() == 5);
  for (int i = 0; i < 5; ++i) CHECK(report["findings"][0]["locations"][i]["line"] == 3 + i);

  const auto log =
      nlohmann::json::parse(lint(conf, {"--select", "tls13-missing", "--format", "sarif"}).out);
  const auto& results = log["runs"][0]["results"];
  REQUIRE(results.size() == 5);
  for (int i = 0; i < 5; ++i) {
    CHECK(results[i]["ruleId"] == "tls13-missing");
    CHECK(results[i]["locations"][0]["physicalLocation"]["region"]["startLine"] == 3 + i);
    CHECK_FALSE(results[i].contains("relatedLocations"));
  }
}

TEST_CASE("findings that differ in message stay apart") {
  // Two sockets, each named in its own ticket-keys-not-shared message: two findings.
  temp_dir d;
  const std::string conf = d.write("nginx.conf", R"(events {}
http {
    server { listen 443 ssl; ssl_certificate /nope/a.pem; ssl_certificate_key /nope/a.key; }
    server { listen 8443 ssl; ssl_certificate /nope/a.pem; ssl_certificate_key /nope/a.key; }
}
)")
                               .string();
  const auto report = nlohmann::json::parse(
      lint(conf, {"--select", "ticket-keys-not-shared", "--format", "json"}).out);
  REQUIRE(report["findings"].size() == 2);
  CHECK_FALSE(report["findings"][0].contains("count"));
}
