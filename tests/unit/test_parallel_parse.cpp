// Large files are parsed on several threads, cut at `server {` lines (src/config/parser.cpp,
// ahead_run). The tree and every error must be those of the serial parse: each case below
// parses the same text both ways and compares whole trees, or error texts and locations.

#include <doctest/doctest.h>

#include <string>
#include <thread>

#include "base/error.hpp"
#include "bench/gen_config.hpp"
#include "config/loader.hpp"
#include "config/parse_internal.hpp"
#include "support/tree_diff.hpp"

namespace cfgns = ngxtls::config;
using ngxtls::test::tree_diff;

namespace {

constexpr std::size_t serial = std::string::npos;

cfgns::config load_text(const std::string& text, std::size_t parallel_min_bytes,
                        std::size_t max_directives = 10000000, std::size_t max_depth = 256) {
  auto src = cfgns::make_memory_source({{"/etc/nginx/nginx.conf", text}});
  cfgns::load_options o;
  o.parallel_parse_min_bytes = parallel_min_bytes;
  o.max_directives = max_directives;
  o.max_depth = max_depth;
  return cfgns::load("/etc/nginx/nginx.conf", *src, o);
}

/// error text and location of loading `text`, or "no error".
std::string error_of(const std::string& text, std::size_t parallel_min_bytes,
                     std::size_t max_directives = 10000000, std::size_t max_depth = 256) {
  try {
    load_text(text, parallel_min_bytes, max_directives, max_depth);
  } catch (const ngxtls::input_error& e) {
    return ngxtls::to_string(e.where()) + ": " + e.message();
  }
  return "no error";
}

bool threads_available() {
  return std::thread::hardware_concurrency() >= 2;
}

/// An http block of `n` servers; server `odd` (if any) gets `extra` inside it.
std::string servers(int n, int odd = -1, const std::string& extra = "") {
  std::string out = "events {}\nhttp {\n    ssl_session_cache shared:SSL:10m;\n";
  for (int i = 0; i < n; ++i) {
    out += "    server {\n        listen 443 ssl;\n        server_name s" + std::to_string(i) +
           ".example.com \"quoted name\" 'single';\n        location / { return 200 \"ok\\n\"; }\n";
    if (i == odd) out += extra;
    out += "    }\n";
  }
  out += "}\n";
  return out;
}

}  // namespace

TEST_CASE("a large generated config parses on several threads into the serial parse's tree") {
  ngxtls::bench::gen_options o;
  o.target_bytes = 1u << 20;
  o.certs.push_back({"/tmp/c.pem", "/tmp/c.key", "example.com"});
  const std::string text = ngxtls::bench::generate_config(o);
  const std::size_t before = cfgns::detail::parallel_splices();
  const cfgns::config par = load_text(text, 0);
  const std::size_t after = cfgns::detail::parallel_splices();
  const cfgns::config ser = load_text(text, serial);
  CHECK(cfgns::detail::parallel_splices() == after);  // npos: never split
  if (threads_available()) CHECK(after == before + 1);
  CHECK(tree_diff(par.root, ser.root) == "");
  CHECK(par.root.size() > 3);
}

TEST_CASE("server lines inside Lua bodies, quoted strings and nested blocks are not cut points") {
  // Each construct holds a line that looks like `server {` but is not a statement start at
  // the http level; moved over every server position, the cut falls into it at some point.
  const std::string tricky[] = {
      "        content_by_lua_block {\n            local s = [[\n    server {\n]]\n"
      "            -- server {\n            local t = \"{\"\n        }\n",
      "        return 200 \"a\n    server {\n\";\n",
      "        add_header X 'b\n    server { listen 1; }\n';\n",
      "        location /n {\n    server {\n        listen 8443;\n    }\n        }\n",
      "        # server {\n",
  };
  std::size_t cases = 0;
  const std::size_t before = cfgns::detail::parallel_splices();
  for (const std::string& extra : tricky) {
    for (int odd = 0; odd < 12; ++odd) {
      const std::string text = servers(12, odd, extra);
      const std::string e_ser = error_of(text, serial);
      const std::string e_par = error_of(text, 0);
      CHECK(e_ser == e_par);
      if (e_ser != "no error") continue;
      ++cases;
      CHECK(tree_diff(load_text(text, 0).root, load_text(text, serial).root) == "");
    }
  }
  CHECK(cases == 60);  // every text above is valid syntax: none may fail either way
  // Most cuts fall between servers and are taken (120 parallel parses in all).
  if (threads_available()) CHECK(cfgns::detail::parallel_splices() - before > 60);
}

TEST_CASE("an error after the first cut is reported where the serial parse reports it") {
  const std::string bad[] = {
      "        listen 80\n",                   // no `;`: runs into the next line's words
      "        return 200 \"unterminated;\n",  // a quote left open to the end of the file
      "    }\n",                               // a stray `}` closes http early
      "        events;\n",                     // a block directive without a block
      "        content_by_lua_block { local x = [==[ }\n",
  };
  for (const std::string& extra : bad) {
    for (int odd : {1, 5, 9, 11}) {
      const std::string text = servers(12, odd, extra);
      const std::string e_ser = error_of(text, serial);
      CHECK(e_ser != "no error");
      CHECK(e_ser == error_of(text, 0));
    }
  }
}

TEST_CASE("limits hold across the pieces: max_directives and max_depth name the same directive") {
  const std::string text = servers(20);
  const cfgns::config all = load_text(text, serial);
  std::size_t total = 0;
  auto count = [&](auto&& self, const cfgns::list<cfgns::directive>& l) -> void {
    for (const auto& d : l) {
      ++total;
      self(self, d.block);
    }
  };
  count(count, all.root);
  CHECK(error_of(text, 0, total) == "no error");
  const std::string e = error_of(text, serial, total - 3);
  CHECK(e.find("(max_directives)") != std::string::npos);
  CHECK(error_of(text, 0, total - 3) == e);

  std::string deep = "        location /a { location /b { location /c { return 204; } } }\n";
  const std::string nested = servers(12, 9, deep);
  const std::string d = error_of(nested, serial, 10000000, 4);
  CHECK(d.find("(max_depth)") != std::string::npos);
  CHECK(error_of(nested, 0, 10000000, 4) == d);
}

TEST_CASE("an included file of servers at its top level is split as well") {
  std::string sites;
  for (int i = 0; i < 12; ++i)
    sites += "server {\n    listen 443 ssl;\n    server_name s" + std::to_string(i) +
             ".example.com;\n}\n";
  auto load_with = [&](std::size_t min_bytes) {
    auto src = cfgns::make_memory_source(
        {{"/etc/nginx/nginx.conf", "events {}\nhttp {\n    include sites.conf;\n}\n"},
         {"/etc/nginx/sites.conf", sites}});
    cfgns::load_options o;
    o.parallel_parse_min_bytes = min_bytes;
    return cfgns::load("/etc/nginx/nginx.conf", *src, o);
  };
  const std::size_t before = cfgns::detail::parallel_splices();
  const cfgns::config par = load_with(0);
  if (threads_available()) CHECK(cfgns::detail::parallel_splices() == before + 1);
  const cfgns::config ser = load_with(serial);
  CHECK(tree_diff(par.root, ser.root) == "");
  REQUIRE(par.root.size() == 2);
  CHECK(par.root[1].block.size() == 12);  // the include replaced by the file's servers
}

TEST_CASE("a cut hidden in a Lua long string does not make the parse slow or different") {
  // Found by a break-it session: the piece after the hidden `server {` line reads Lua text
  // as nginx statements; one long line of quoted `*_by_lua_block` names made every
  // statement rescan its line for its column (quadratic, 13 s for 1.7 MB). Positions now
  // move back within the line without a rescan, and pieces stop once the serial parse
  // passes their cut.
  std::string text =
      "http {\n    server { listen 1; }\n    server {\n        content_by_lua_block {\n"
      "            local s = [[\n";
  for (int i = 0; i < 2000; ++i) text += "-- pad\n";
  text += "    server {\n";
  for (int i = 0; i < 40000; ++i) text += "a_by_lua_block 'q' {} ";
  text += "\n]]\n        }\n    }\n    server { listen 2; }\n}\n";
  const cfgns::config par = load_text(text, 0);
  const cfgns::config ser = load_text(text, serial);
  CHECK(tree_diff(par.root, ser.root) == "");
  REQUIRE(ser.root.size() == 1);
  CHECK(ser.root[0].block.size() == 3);
  // The serial parse alone had the same cost on a line of such statements.
  std::string line = "http {\n";
  for (int i = 0; i < 40000; ++i) line += "a_by_lua_block 'q' {} ";
  line += "\n}\n";
  const cfgns::config one = load_text(line, serial);
  REQUIRE(one.root[0].block.size() == 40000);
  const cfgns::directive& last = one.root[0].block.back();
  CHECK(last.line == 2);
  CHECK(last.column == 39999 * 22 + 1);  // 22 bytes per statement, 1-based
}
