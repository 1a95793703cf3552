// The rule fixtures as a whole, with the built-in catalog: every folder belongs to a rule, and the
// driver (tests/rule_tests/fixture_driver.hpp) fails what it should. Each folder's own case,
// "rule fixtures: RULE-ID", is in the rule's own test executable (test_rule_fixtures_NAME, built
// from tests/rule_tests/one_rule_test.cpp with that rule alone).

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "engine/engine.hpp"
#include "rule_tests/fixture_driver.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;

TEST_CASE("every rule fixture folder is a rule's and every rule lint reports has a folder") {
  const auto folders = test::rule_fixture_folders();
  CHECK(folders.size() >= 20);
  const std::set<std::string> named(folders.begin(), folders.end());
  for (const auto& f : folders)
    CHECK_MESSAGE(engine::find_rule(f) != nullptr, "fixture folder names no rule: " << f);
  for (const auto& r : engine::all_rules())
    CHECK_MESSAGE((r.probe_only || named.count(r.id)),
                  "rule without fixtures/rules/" << r.id << "/");
}

TEST_CASE("a failing fixture is named by its file under fixtures and not by the temporary copy") {
  // The real folder, linted with a rule that has lost its check: every expectation fails.
  const std::string rule = "tls13-resumption-disabled";
  engine::rule_catalog broken{*engine::find_rule(rule)};
  broken.front().check = [](const engine::context&, engine::finding_list&) {};
  const auto problems = test::rule_folder_problems(broken, rule);
  REQUIRE(problems.size() >= 2);
  const std::string file = "fixtures/rules/" + rule + "/tickets-off-no-cache.conf";
  bool named = false;
  for (const auto& p : problems) {
    INFO(p.file << ":" << p.problems);
    if (p.problems.empty()) continue;  // a negative control: no expectation to miss
    CHECK(p.file.rfind("fixtures/rules/" + rule + "/", 0) == 0);
    CHECK(p.problems.find("no finding matches") != std::string::npos);
    CHECK(p.problems.find(" at " + p.file + ":") != std::string::npos);
    CHECK(p.problems.find("/ngxtls-test-") == std::string::npos);  // test::temp_dir's name
    named = named || p.file == file;
  }
  CHECK(named);
}

TEST_CASE("a wrong expected message, column or severity fails the fixture") {
  // A copy of a real fixture whose one expectation is rewritten: right, then wrong in each part.
  const std::string rule = "tls13-resumption-disabled";
  const fs::path src = test::source_dir() / "fixtures/rules" / rule / "tickets-off-no-cache.conf";
  const std::string text = test::read_file(src);
  const std::string marker = "# expect: " + rule + " error";
  REQUIRE(text.find(marker) != std::string::npos);
  test::temp_dir tmp;
  const fs::path dir = tmp.path() / rule;
  fs::create_directories(dir);
  const std::string fixed = test::read_file(src.parent_path() / "tickets-off-no-cache.fixed.conf");
  REQUIRE(fixed.find(marker) != std::string::npos);
  // The problems check_fixture() finds with `expect` in place of the committed expectation.
  const auto with = [&](const std::string& expect) {
    std::string t = text, ft = fixed;
    t.replace(t.find(marker), marker.size(), "# expect: " + expect);
    ft.replace(ft.find(marker), marker.size(), "# expect: " + expect);
    std::ofstream(dir / "case.conf", std::ios::trunc | std::ios::binary) << t;
    std::ofstream(dir / "case.fixed.conf", std::ios::trunc | std::ios::binary) << ft;
    try {
      return test::check_fixture(engine::all_rules(), rule, dir, dir / "case.conf");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  };
  const std::string right = rule + " error col 9 \"no TLS 1.3 client can resume\"";
  CHECK(with(right) == "");
  CHECK(with(rule) == "");
  CHECK(with(rule + " error \"a message no rule writes\"").find("no finding matches") !=
        std::string::npos);
  CHECK(with(rule + " error col 3").find("no finding matches") != std::string::npos);
  CHECK(with(rule + " note").find("no finding matches") != std::string::npos);
  CHECK(with(rule + " error, " + rule).find("no finding matches") != std::string::npos);
  CHECK(with(rule + " colour 3").find("unknown word") != std::string::npos);
  CHECK(with(rule + " \"unterminated").find("unterminated") != std::string::npos);
}

TEST_CASE("a fix that does not give the .fixed.conf beside the fixture fails it") {
  const std::string rule = "tls13-resumption-disabled";
  const fs::path src_dir = test::source_dir() / "fixtures/rules" / rule;
  test::temp_dir tmp;
  const fs::path dir = tmp.path() / rule;
  fs::create_directories(dir);
  fs::copy_file(src_dir / "tickets-off-no-cache.conf", dir / "case.conf");
  // Without a .fixed.conf, a fixture whose finding has an edit fails.
  CHECK(test::check_fixture(engine::all_rules(), rule, dir, dir / "case.conf")
            .find("write the fixed text") != std::string::npos);
  // With the committed one it passes; with one changed byte it fails.
  const std::string fixed = test::read_file(src_dir / "tickets-off-no-cache.fixed.conf");
  std::ofstream(dir / "case.fixed.conf", std::ios::binary) << fixed;
  CHECK(test::check_fixture(engine::all_rules(), rule, dir, dir / "case.conf") == "");
  std::ofstream(dir / "case.fixed.conf", std::ios::trunc | std::ios::binary) << fixed << "\n";
  CHECK(test::check_fixture(engine::all_rules(), rule, dir, dir / "case.conf")
            .find("differs from case.fixed.conf") != std::string::npos);
}
