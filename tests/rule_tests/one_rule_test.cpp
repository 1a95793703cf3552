// The fixture test of one rule, built for each rule file rules/NAME.cpp (tests/CMakeLists.txt) as
// test_rule_fixtures_NAME: this file, that rule's objects and a generated source naming
// rules::NAME, without the catalog or any other rule, so that building one rule's test compiles
// that rule and the layers below it. Its one doctest case is "rule fixtures: RULE-ID", checking
// fixtures/rules/RULE-ID/ (tests/rule_tests/fixture_driver.hpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "rule_tests/fixture_driver.hpp"
#include "support/process.hpp"

namespace ngxtls::test {
// Defined by the generated source: the rule's function, and the whole catalog for a rule whose
// findings depend on which other rules exist (unused-suppression names a suppression of an
// unknown rule), null for every other rule.
extern engine::rule (*const rule_under_test)();
extern const engine::rule_catalog& (*const whole_catalog)();
}  // namespace ngxtls::test

using namespace ngxtls;

namespace {

const engine::rule& the_rule() {
  static const engine::rule r = test::rule_under_test();
  return r;
}

/// The rules the run knows of: the rule alone, or the whole catalog.
const engine::rule_catalog& known_rules() {
  static const engine::rule_catalog c =
      test::whole_catalog ? test::whole_catalog() : engine::rule_catalog{the_rule()};
  return c;
}

void check_the_rule_folder() {
  test::check_rule_folder(known_rules(), the_rule().id);
}

}  // namespace

// The case is registered here rather than by a TEST_CASE because its name holds the rule's id,
// known only once the rule's function has run (after static initialisation). A rule only `check`
// reports (probe_only) without a fixture folder has no case.
int main(int argc, char** argv) {
  const std::string title = "rule fixtures: " + the_rule().id;
  const bool has_folder =
      std::filesystem::is_directory(test::source_dir() / "fixtures/rules" / the_rule().id);
  if (has_folder || !the_rule().probe_only)
    doctest::detail::regTest(
        doctest::detail::TestCase(&check_the_rule_folder, __FILE__, __LINE__,
                                  doctest_detail_test_suite_ns::getCurrentTestSuite()) *
        title.c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
