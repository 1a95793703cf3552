// What users and contributors read points only at pages the repository holds: measured facts
// are cited as anchors of docs/nginx-facts.md, and every cited anchor exists there.

#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "support/process.hpp"

using namespace ngxtls;

namespace {

/// The files git tracks in the source tree, or an empty list outside a git checkout.
std::vector<std::string> tracked_files() {
  const auto r = test::run({"git", "-C", test::source_dir().string(), "ls-files", "-z"});
  std::vector<std::string> out;
  if (r.exit_code != 0) return out;
  std::string name;
  std::istringstream in(r.out);
  while (std::getline(in, name, '\0'))
    if (!name.empty()) out.push_back(name);
  return out;
}

}  // namespace

TEST_CASE("no tracked file cites the design notes' fact numbers") {
  const auto files = tracked_files();
  if (files.empty()) return test::skip_test("not a git checkout: no list of tracked files");
  // Spelled in two pieces so that this file does not match itself.
  const std::string old_citation = std::string("DESIGN") + " fact";
  std::string offenders;
  for (const auto& f : files) {
    if (f == "docs/nginx-facts.md") continue;
    const auto path = test::source_dir() / f;
    if (!std::filesystem::is_regular_file(path)) continue;
    const std::string text = test::read_file(path);
    if (text.find(old_citation) != std::string::npos) offenders += "\n  " + f;
  }
  CHECK_MESSAGE(offenders.empty(), "cite docs/nginx-facts.md#ANCHOR instead in:" << offenders);
}

TEST_CASE("every cited docs/nginx-facts.md anchor exists on that page") {
  const auto files = tracked_files();
  if (files.empty()) return test::skip_test("not a git checkout: no list of tracked files");
  const std::string page = test::read_file(test::source_dir() / "docs/nginx-facts.md");
  std::set<std::string> anchors;
  const std::regex id_re(R"re(<a id="([a-z0-9-]+)"></a>)re");
  for (std::sregex_iterator it(page.begin(), page.end(), id_re), end; it != end; ++it)
    anchors.insert((*it)[1]);
  REQUIRE(anchors.size() >= 11);
  // The page and an anchor, then the short "#other-anchor" form that may follow in one citation.
  const std::regex cite_re(R"(nginx-facts\.md#([a-z0-9-]+)((?:(?:,| and) #[a-z0-9-]+)*))");
  const std::regex more_re(R"(#([a-z0-9-]+))");
  std::size_t citations = 0;
  std::string missing;
  for (const auto& f : files) {
    const auto path = test::source_dir() / f;
    if (!std::filesystem::is_regular_file(path)) continue;
    const std::string text = test::read_file(path);
    for (std::sregex_iterator it(text.begin(), text.end(), cite_re), end; it != end; ++it) {
      std::vector<std::string> cited{(*it)[1]};
      const std::string rest = (*it)[2];
      for (std::sregex_iterator m(rest.begin(), rest.end(), more_re); m != end; ++m)
        cited.push_back((*m)[1]);
      for (const auto& a : cited) {
        ++citations;
        if (!anchors.count(a)) missing += "\n  " + f + ": #" + a;
      }
    }
  }
  CHECK_MESSAGE(missing.empty(), "anchors cited but not on docs/nginx-facts.md:" << missing);
  CHECK(citations >= 50);
}
