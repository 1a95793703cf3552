// The CI formats besides SARIF, through the real binary, each read by a parser of its own
// kind and checked for the shape its consumers read: GitLab Code Quality (JSON), JUnit XML and
// checkstyle XML; one entry per place, paths relative to the project root.

#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using namespace ngxtls::test;
using json = nlohmann::json;

namespace {

// A repository whose config has two places of one cause and a message with a control byte
// and XML's special characters (an unknown directive named with them).
struct repo {
  temp_dir dir;
  repo() {
    REQUIRE(run({"git", "init", "-q", dir.path().string()}, "", 30).exit_code == 0);
    dir.write("nginx/nginx.conf",
              "worker_processes 4;\nevents {}\nhttp {\n    include sites/*.conf;\n}\n");
    dir.write("nginx/sites/a.conf",
              "server {\n    listen 443 ssl;\n    ssl_session_cache builtin;\n"
              "    x<&\"'\x1b y;\n}\n");
    dir.write("nginx/sites/b.conf",
              "server {\n    listen 8443 ssl;\n    ssl_session_cache builtin;\n}\n");
  }
  command_result lint(const std::string& format) const {
    return run({"/bin/sh", "-c",
                "cd \"$0\"/nginx && exec \"$1\" lint nginx.conf --nginx-version "
                "1.22.1 --select session-cache-per-worker,unknown-directive "
                "--fail-on never --format \"$2\"",
                dir.path().string(), ngxtls_binary(), format},
               "", 60);
  }
};

// Runs a Python check on `text` (stdin); its stdout is returned, exit 0 required.
std::string python(const std::string& program, const std::string& text) {
  temp_dir d;
  const auto script = d.write("check.py", program);
  auto r = run({"python3", script.string()}, text, 60);
  REQUIRE_MESSAGE(r.exit_code == 0, (r.out + r.err));
  return r.out;
}

}  // namespace

TEST_CASE("--format gitlab writes GitLab Code Quality issues, one per place") {
  repo rp;
  auto r = rp.lint("gitlab");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const json issues = json::parse(r.out);
  REQUIRE(issues.is_array());
  REQUIRE(issues.size() == 3);
  std::set<std::string> fingerprints, places;
  for (const auto& i : issues) {
    for (const char* k : {"description", "check_name", "fingerprint", "severity"})
      CHECK(i[k].is_string());
    CHECK(std::set<std::string>{"info", "minor", "major", "critical", "blocker"}.count(
              i["severity"].get<std::string>()) == 1);
    CHECK(i["location"]["lines"]["begin"].is_number_integer());
    fingerprints.insert(i["fingerprint"].get<std::string>());
    places.insert(i["location"]["path"].get<std::string>() + ":" +
                  std::to_string(i["location"]["lines"]["begin"].get<int>()));
  }
  CHECK(fingerprints.size() == 3);
  CHECK(places == std::set<std::string>{"nginx/sites/a.conf:3", "nginx/sites/a.conf:4",
                                        "nginx/sites/b.conf:3"});
}

TEST_CASE("--format junit writes JUnit XML that an XML parser reads, a failing case per place") {
  repo rp;
  auto r = rp.lint("junit");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string out = python(R"(import sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.buffer.read())
assert root.tag == "testsuites", root.tag
suites = root.findall("testsuite")
assert len(suites) == 1
cases = suites[0].findall("testcase")
assert int(suites[0].get("tests")) == len(cases) == int(root.get("tests"))
assert int(suites[0].get("failures")) == len([c for c in cases if c.find("failure") is not None])
for c in cases:
    f = c.find("failure")
    print(c.get("classname"), c.get("line"), f.get("type"), f.get("message"))
)",
                                 r.out);
  CHECK(out.find("nginx/sites/a.conf 3 warning") != std::string::npos);
  CHECK(out.find("nginx/sites/b.conf 3 warning") != std::string::npos);
  // The directive name's special characters survive as text, the control byte as \x1b.
  CHECK(out.find("x<&\"'\\x1b") != std::string::npos);

  // No findings: one passing case, never an empty suite.
  temp_dir clean;
  clean.write("nginx.conf", "events {}\nhttp {}\n");
  auto none = run({ngxtls_binary(), "lint", (clean.path() / "nginx.conf").string(), "--format",
                   "junit", "--select", "session-cache-per-worker"},
                  "", 60);
  CHECK(python(R"(import sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.buffer.read())
print(root.get("tests"), root.get("failures"), len(root.iter("testcase").__next__().findall("failure")))
)",
               none.out) == "1 0 0\n");
}

TEST_CASE("--format checkstyle writes checkstyle XML grouped by file") {
  repo rp;
  auto r = rp.lint("checkstyle");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string out = python(R"(import sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.buffer.read())
assert root.tag == "checkstyle"
for f in root.findall("file"):
    for e in f.findall("error"):
        assert e.get("severity") in ("error", "warning", "info")
        assert e.get("source").startswith("ngxtls.")
        print(f.get("name"), e.get("line"), e.get("column"), e.get("severity"), e.get("source"))
)",
                                 r.out);
  CHECK(out ==
        "nginx/sites/a.conf 3 5 warning ngxtls.session-cache-per-worker\n"
        "nginx/sites/a.conf 4 5 error ngxtls.unknown-directive\n"
        "nginx/sites/b.conf 3 5 warning ngxtls.session-cache-per-worker\n");
}
