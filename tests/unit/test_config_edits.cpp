// config::apply_edits, the one place edits to a config file's bytes are applied: lint --fix
// (engine::apply_fixes, its files and its diff) and the sandbox's mirror of the operator's files
// (nginx -t of the whole config, where every line must keep its number). Expected texts are
// worked out by hand.

#include <doctest/doctest.h>

#include <string>

#include "config/edits.hpp"
#include "config/loader.hpp"
#include "engine/fix.hpp"

using namespace ngxtls;
using config::byte_edit;
using config::replaced_newlines;

TEST_CASE("apply_edits replaces and inserts at byte offsets, in the order of the offsets") {
  const std::string text = "a 1;\nb 2;\nc 3;\n";
  // Given out of order: applied by offset.
  CHECK(config::apply_edits(text, {{10, 4, "C 30;"}, {0, 0, "# top\n"}, {5, 4, "B 20;"}},
                            replaced_newlines::dropped) == "# top\na 1;\nB 20;\nC 30;\n");
  CHECK(config::apply_edits(text, {}, replaced_newlines::dropped) == text);
  // An insertion at the end, and an offset past the end read as the end.
  CHECK(config::apply_edits(text, {{text.size(), 0, "d 4;\n"}}, replaced_newlines::dropped) ==
        text + "d 4;\n");
  CHECK(config::apply_edits(text, {{99, 0, "x"}}, replaced_newlines::dropped) == text + "x");
}

TEST_CASE("apply_edits puts an insertion before a replacement at the same offset") {
  const std::string text = "a 1;b 2;\n";
  // Whatever the order given: the insertion, then the replaced directive.
  for (const auto& edits : {std::vector<byte_edit>{{4, 4, "b 9;"}, {4, 0, "c 3;"}},
                            std::vector<byte_edit>{{4, 0, "c 3;"}, {4, 4, "b 9;"}}})
    CHECK(config::apply_edits(text, edits, replaced_newlines::dropped) == "a 1;c 3;b 9;\n");
  // Two insertions at one offset keep the order given.
  CHECK(config::apply_edits(text, {{4, 0, "x;"}, {4, 0, "y;"}}, replaced_newlines::dropped) ==
        "a 1;x;y;b 2;\n");
}

TEST_CASE("apply_edits skips an edit that begins inside the bytes an earlier one replaced") {
  const std::string text = "0123456789";
  CHECK(config::apply_edits(text, {{2, 5, "X"}, {4, 1, "Y"}}, replaced_newlines::dropped) ==
        "01X789");
  // Touching is not overlapping: the second begins where the first ends.
  CHECK(config::apply_edits(text, {{2, 3, "X"}, {5, 1, "Y"}}, replaced_newlines::dropped) ==
        "01XY6789");
}

TEST_CASE("apply_edits with replaced_newlines::kept keeps every later line at its number") {
  const std::string text = "a 1;\nlua_block {\n  x;\n}\nb 2;\n";
  const std::size_t begin = text.find("lua_block"), end = text.find("}") + 1;
  // Left out (replaced by nothing): the three newlines it spanned stay, b is still on line 5.
  const std::string kept =
      config::apply_edits(text, {{begin, end - begin, ""}}, replaced_newlines::kept);
  CHECK(kept == "a 1;\n\n\n\nb 2;\n");
  const std::string dropped =
      config::apply_edits(text, {{begin, end - begin, ""}}, replaced_newlines::dropped);
  CHECK(dropped == "a 1;\n\nb 2;\n");
  // A replacement with newlines of its own: the replaced bytes' newlines come after it.
  CHECK(config::apply_edits("a;\nb;\n", {{0, 3, "x;"}}, replaced_newlines::kept) == "x;\nb;\n");
}

TEST_CASE("lint --fix applies an insertion and a replacement at one offset in that order") {
  // Two findings: one replaces `b 2;`, the other inserts right before it (after `a 1;`, with
  // nothing between). Given replacement first, the files and the diff both hold the insertion
  // first; applied the other way round the copy of the text between them went wrong.
  const std::string text = "http {\n  a 1;b 2;\n}\n";
  auto source = config::make_memory_source({});
  config::load_options o;
  o.conf_prefix = "/";
  const auto cfg = config::load_buffer(text, "/n.conf", *source, o);
  const std::size_t at = text.find("b 2;");
  engine::finding replace, insert;
  replace.rule = "r1";
  replace.location = {"/n.conf", 2, 7};
  replace.edits = {engine::text_edit{"/n.conf", at, 4, "b 9;"}};
  insert.rule = "r2";
  insert.location = {"/n.conf", 2, 3};
  insert.edits = {engine::text_edit{"/n.conf", at, 0, "c 3;"}};
  const auto result = engine::apply_fixes(cfg, {replace, insert});
  CHECK(result.applied == 2);
  CHECK(result.conflicts.empty());
  CHECK(result.refused.empty());
  REQUIRE(result.files.count("/n.conf") == 1);
  CHECK(result.files.at("/n.conf") == "http {\n  a 1;c 3;b 9;\n}\n");
  CHECK(result.diff.find("-  a 1;b 2;\n+  a 1;c 3;b 9;\n") != std::string::npos);
}
