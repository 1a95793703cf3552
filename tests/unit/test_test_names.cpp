// Guards the test suite itself: doctest_discover_tests hands each case name to CMake, which
// splits a name at ';' (its list separator). Such a case silently runs nothing under ctest.

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>

#include "support/process.hpp"

namespace fs = std::filesystem;

TEST_CASE("no test case or subcase name holds a semicolon") {
  const std::regex name(R"re((TEST_CASE|SUBCASE)\("((?:[^"\\]|\\.)*)"\))re");
  int cases = 0;
  for (const auto& e : fs::recursive_directory_iterator(ngxtls::test::source_dir() / "tests")) {
    if (e.path().extension() != ".cpp") continue;
    const std::string text = ngxtls::test::read_file(e.path());
    for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) {
      ++cases;
      const std::string n = (*it)[2];
      CHECK_MESSAGE(n.find(';') == std::string::npos, e.path().filename().string()
                                                          << ": \"" << n << "\"");
    }
  }
  CHECK(cases > 100);
}
