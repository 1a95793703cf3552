// lint --fix's edits land in the block they are meant for: insert_after on a directive that
// shares its line with the braces closing its blocks, and misplaced_edit(), the re-parse that
// apply_fixes runs before a fix is shown or written.

#include <doctest/doctest.h>

#include <string>

#include "config/loader.hpp"
#include "engine/fix.hpp"

using namespace ngxtls;

namespace {

config::config load(const std::string& text) {
  auto source = config::make_memory_source({});
  config::load_options o;
  o.conf_prefix = "/";
  return config::load_buffer(text, "/n.conf", *source, o);
}

// The first directive named `name` at any depth.
const config::directive* find(config::list<config::directive> level, const std::string& name) {
  for (const auto& d : level) {
    if (d.name == name) return &d;
    if (d.has_block)
      if (const auto* inner = find(d.block, name)) return inner;
  }
  return nullptr;
}

std::string applied(const std::string& text, const engine::text_edit& e) {
  std::string out = text;
  out.replace(e.offset, e.length, e.replacement);
  return out;
}

}  // namespace

TEST_CASE(
    "insert_after on a one-line http { server { ... } } puts the text inside the server block") {
  const std::string text = "events {} http { server { ssl_session_tickets off; } }\n";
  auto cfg = load(text);
  const auto* anchor = find(cfg.root, "ssl_session_tickets");
  REQUIRE(anchor != nullptr);
  auto e = engine::insert_after(cfg, *anchor, "ssl_session_cache shared:SSL:10m;  # why");
  REQUIRE(e);
  CHECK(applied(text, *e) ==
        "events {} http { server { ssl_session_tickets off;\nssl_session_cache shared:SSL:10m;  # "
        "why\n } }\n");
  CHECK(engine::misplaced_edit(text, {*e}, "/n.conf").empty());
  // The same directive on a line of its own (a trailing comment kept where it is): next line.
  const std::string lines =
      "http {\n    server {\n        ssl_session_tickets off;  # c\n    }\n}\n";
  auto cfg2 = load(lines);
  auto e2 = engine::insert_after(cfg2, *find(cfg2.root, "ssl_session_tickets"),
                                 "ssl_session_cache shared:S:1m;");
  REQUIRE(e2);
  CHECK(applied(lines, *e2) ==
        "http {\n    server {\n        ssl_session_tickets off;  # c\n        ssl_session_cache "
        "shared:S:1m;\n    }\n}\n");
  CHECK(engine::misplaced_edit(lines, {*e2}, "/n.conf").empty());
}

TEST_CASE(
    "misplaced_edit names an edit whose directive lands outside its anchor's block, or that breaks "
    "the parse") {
  const std::string text = "events {} http { server { ssl_session_tickets off; } }\n";
  auto cfg = load(text);
  const auto* anchor = find(cfg.root, "ssl_session_tickets");
  REQUIRE(anchor != nullptr);
  // What the old insert_after did: the next line, after the braces: the main context.
  engine::text_edit after_braces{"/n.conf", text.size(), 0, "ssl_session_cache shared:SSL:10m;\n",
                                 anchor->offset};
  CHECK(engine::misplaced_edit(text, {after_braces}, "/n.conf") ==
        "a directive the fix writes (line 2) would land outside the block it belongs in");
  // An edit that unbalances the braces.
  engine::text_edit broken{"/n.conf", anchor->offset, 0, "} ", anchor->offset};
  CHECK(engine::misplaced_edit(text, {broken}, "/n.conf")
            .rfind("the fixed file would not parse: ", 0) == 0);
  // A replacement in place keeps its block.
  auto r = engine::replace_directive(cfg, *anchor, "ssl_session_tickets on;");
  REQUIRE(r);
  CHECK(engine::misplaced_edit(text, {*r}, "/n.conf").empty());
}
