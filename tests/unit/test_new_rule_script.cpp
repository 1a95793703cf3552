// scripts/new-rule.sh, run on a scratch copy of the files it reads and writes (building ngxtls
// there would take minutes): the files it writes, the registration lines it adds, and its
// refusals, which must leave the tree as it was.

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;

namespace {

/// A scratch tree with the files the script reads: the rule list, the declarations, one rule
/// and its fixtures and doc page.
struct scratch_tree {
  test::temp_dir dir;
  scratch_tree() {
    const fs::path src = test::source_dir();
    for (const char* f : {"rules/registry.cpp", "rules/rules.hpp", "rules/weak_key.cpp",
                          "docs/rules/weak-key.md"}) {
      fs::create_directories((dir.path() / f).parent_path());
      fs::copy_file(src / f, dir.path() / f);
    }
    fs::create_directories(dir.path() / "fixtures/rules");
    fs::copy(src / "fixtures/rules/weak-key", dir.path() / "fixtures/rules/weak-key",
             fs::copy_options::recursive);
  }
  test::command_result run(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{
        "bash",       (test::source_dir() / "scripts/new-rule.sh").string(),
        "--root",     dir.path().string(),
        "--no-build", "--"};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run(argv);
  }
  std::string read(const std::string& f) const { return test::read_file(dir.path() / f); }
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("new-rule.sh writes the rule and two fixtures and registers the rule once") {
  scratch_tree t;
  const std::string registry_before = t.read("rules/registry.cpp");
  const auto r = t.run({"cipher-order-odd", "Cipher order set oddly"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);

  const std::string cpp = t.read("rules/cipher_order_odd.cpp");
  CHECK(cpp.find("constexpr const char* id = \"cipher-order-odd\";") != std::string::npos);
  CHECK(cpp.find("engine::rule cipher_order_odd() {") != std::string::npos);
  CHECK(cpp.find("\"Cipher order set oddly\"") != std::string::npos);
  CHECK(cpp.find("R\"(# cipher-order-odd\n") != std::string::npos);
  for (const char* h : {"## What it flags", "## Why it matters", "## Example", "## Fix",
                        "## How the prober confirms it", "## Source"})
    CHECK_MESSAGE(count(cpp, std::string("\n") + h + "\n") == 1, h);

  // Registered once each, after the last rule already there.
  const std::string registry = t.read("rules/registry.cpp");
  CHECK(count(registry, "rules::cipher_order_odd(),") == 1);
  // The rule registered last before the script ran, whichever it is.
  const std::size_t last_at = registry_before.rfind("      rules::");
  REQUIRE(last_at != std::string::npos);
  const std::string last_line =
      registry_before.substr(last_at, registry_before.find('\n', last_at) - last_at + 1);
  CHECK(registry.find(last_line + "      rules::cipher_order_odd(),\n") != std::string::npos);
  CHECK(registry.size() ==
        registry_before.size() + std::string("      rules::cipher_order_odd(),\n").size());
  const std::string hpp = t.read("rules/rules.hpp");
  CHECK(count(hpp, "engine::rule cipher_order_odd();") == 1);
  CHECK(
      hpp.find(
          ";\n/// cipher-order-odd: Cipher order set oddly.\nengine::rule cipher_order_odd();\n") !=
      std::string::npos);

  // One fixture with one expected finding, one without.
  const std::string flags = t.read("fixtures/rules/cipher-order-odd/flags.conf");
  const std::string ok = t.read("fixtures/rules/cipher-order-odd/ok.conf");
  CHECK(count(flags, "# expect: cipher-order-odd warning") == 1);
  CHECK(count(ok, "# expect:") == 0);
  CHECK(flags.find("listen 443 ssl;") != std::string::npos);
}

TEST_CASE("new-rule.sh pins the example finding's column and message and writes formatted C++") {
  scratch_tree t;
  // An id and a summary long enough that unformatted lines would pass the column limit.
  const std::string id = "a-rather-long-rule-id-that-wraps-comments";
  const auto r = t.run({id,
                        "A summary long enough that the registration line and the header "
                        "comment both pass one hundred columns"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);

  // The fixture pins the finding by line (the expectation's own), severity, column and message.
  // The column is the example directive's, counted here; the message is the example check's
  // literal followed by the fixture's argument.
  const std::string flags = t.read("fixtures/rules/" + id + "/flags.conf");
  const std::string directive = "ssl_buffer_size 4k;";
  const std::size_t line_start = flags.rfind('\n', flags.find(directive)) + 1;
  const std::size_t column = flags.find(directive) - line_start + 1;
  const std::string cpp = t.read("rules/a_rather_long_rule_id_that_wraps_comments.cpp");
  const std::string literal = "\"TODO: say what is wrong with ssl_buffer_size \"";
  REQUIRE(cpp.find(literal) != std::string::npos);
  const std::string message = literal.substr(1, literal.size() - 2) + "4k";
  const std::string expect =
      "# expect: " + id + " warning col " + std::to_string(column) + " \"" + message + "\"";
  CHECK_MESSAGE(count(flags, expect + "\n") == 1, flags);
  CHECK(flags.find(directive + "  " + expect) != std::string::npos);

  // Every C++ file it wrote or edited is as clang-format-14 leaves it with the tree's style.
  for (const std::string f : {"rules/a_rather_long_rule_id_that_wraps_comments.cpp",
                              "rules/rules.hpp", "rules/registry.cpp"}) {
    INFO("file: " << f);
    const auto formatted = test::run(
        {"clang-format-14", "--style=file:" + (test::source_dir() / ".clang-format").string(),
         (t.dir.path() / f).string()});
    REQUIRE_MESSAGE(formatted.exit_code == 0, formatted.err);
    CHECK(formatted.out == t.read(f));
  }

  // The scaffold says where the probe question and the resumption cost are declared.
  CHECK(cpp.find("r.confirmed_by = engine::probe_question::none;") != std::string::npos);
  CHECK(cpp.find("r.costs_resumption = false;") != std::string::npos);
}

TEST_CASE("new-rule.sh refuses an existing rule and a malformed id and then writes nothing") {
  scratch_tree t;
  const std::string registry = t.read("rules/registry.cpp"), hpp = t.read("rules/rules.hpp");
  const auto unchanged = [&] {
    CHECK(t.read("rules/registry.cpp") == registry);
    CHECK(t.read("rules/rules.hpp") == hpp);
  };
  // An existing rule: its file, its fixture folder, its registration.
  auto r = t.run({"weak-key", "again"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("exists already") != std::string::npos);
  unchanged();
  for (const std::string bad : {"Weak-Key", "weak_key", "-weak", "weak-", "weak--key", "1weak",
                                "weak/../key", "", "weak key"}) {
    INFO("id: \"" << bad << "\"");
    r = t.run({bad, "summary"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("is not a rule id") != std::string::npos);
    unchanged();
  }
  CHECK(t.run({"fine-id", "a \"quoted\" summary"}).exit_code == 2);
  CHECK(t.run({"fine-id"}).exit_code == 2);
  unchanged();
  CHECK_FALSE(fs::exists(t.dir.path() / "rules/fine_id.cpp"));
  CHECK_FALSE(fs::exists(t.dir.path() / "fixtures/rules/fine-id"));
  // The same new id twice: the second run is refused.
  REQUIRE(t.run({"fine-id", "Fine"}).exit_code == 0);
  const std::string registered = t.read("rules/registry.cpp");
  r = t.run({"fine-id", "Fine"});
  CHECK(r.exit_code == 2);
  CHECK(t.read("rules/registry.cpp") == registered);
}
