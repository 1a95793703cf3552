// docs/rules/ is generated from each rule's own doc text (CONVENTIONS, Rules): this test fails
// when a page drifts from its rule. Regenerate with `ngxtls rules --write-docs docs/rules`.

#include <doctest/doctest.h>

#include <filesystem>

#include "engine/engine.hpp"
#include "report/rule_docs.hpp"
#include "support/process.hpp"

using namespace ngxtls;

TEST_CASE("every rule doc has the six sections and docs/rules matches the rule text") {
  const auto dir = test::source_dir() / "docs/rules";
  std::string drift;
  for (const auto& r : engine::all_rules()) {
    INFO("rule: " << r.id);
    CHECK(r.doc.rfind("# " + r.id + "\n", 0) == 0);
    for (const char* h : {"## What it flags", "## Why it matters", "## Example", "## Fix",
                          "## How the prober confirms it", "## Source"})
      CHECK_MESSAGE(r.doc.find(h) != std::string::npos, "missing section " << h);
    const auto page = dir / (r.id + ".md");
    if (!std::filesystem::exists(page) || test::read_file(page) != report::rule_page(r))
      drift += " " + r.id;
  }
  if (!std::filesystem::exists(dir / "README.md") ||
      test::read_file(dir / "README.md") != report::rules_index())
    drift += " README.md";
  CHECK_MESSAGE(
      drift.empty(),
      "docs/rules drifted from the rules (run `ngxtls rules --write-docs docs/rules`):" << drift);
  // No stale pages for rules that no longer exist.
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto stem = e.path().stem().string();
    if (stem != "README")
      CHECK_MESSAGE(engine::find_rule(stem) != nullptr, "page without a rule: " << stem);
  }
}
