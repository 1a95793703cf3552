#pragma once
// The rule fixture driver: lints each fixture of fixtures/rules/RULE/ with that rule alone and
// compares the findings with the fixture's `# expect:` comments and its .fixed.conf files
// (the syntax is described at the top of fixture_driver.cpp). Each rule's test
// (tests/rule_tests/one_rule_test.cpp) and tests/unit/test_rule_fixtures.cpp use it.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.hpp"

namespace ngxtls::test {

/// What is wrong with one fixture file of `rule` ("" when nothing): its findings against its
/// expectations, and its fixed text against NAME.fixed.conf. A missing NAME.fixed.conf is
/// written to `write_to` (the source folder) when NGXTLS_WRITE_FIXED is set, for review.
std::string check_fixture(const engine::rule_catalog& catalog, const std::string& rule,
                          const std::filesystem::path& rule_dir, const std::filesystem::path& file,
                          const std::optional<std::filesystem::path>& write_to = std::nullopt);

/// What is wrong with one fixture file, named as it is under the source tree.
struct fixture_problems {
  std::string file;  ///< "fixtures/rules/RULE/NAME.conf" (or the folder)
  std::string
      problems;  ///< check_fixture()'s text ("": none), paths into the copy as under fixtures/
};

/// Every fixture file of fixtures/rules/`rule` (problems "" when it passes), checked in a temporary
/// copy of the folder with generated keys and certificates; a problem names files under fixtures/,
/// not the copy. `catalog` holds the rules the run knows of; only `rule` runs.
std::vector<fixture_problems> rule_folder_problems(const engine::rule_catalog& catalog,
                                                   const std::string& rule);

/// rule_folder_problems() as doctest checks, one per file with a problem.
void check_rule_folder(const engine::rule_catalog& catalog, const std::string& rule);

/// The folders of fixtures/rules, sorted.
std::vector<std::string> rule_fixture_folders();

}  // namespace ngxtls::test
