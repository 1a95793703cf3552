#pragma once
// Record-by-record comparison of two syntax trees: the parallel parse must give the serial
// parse's tree (tests/unit/test_parallel_parse.cpp, and the fuzz target on every input).
// Header-only: the fuzz build links no test support library.

#include <string>

#include "config/tree.hpp"

namespace ngxtls::test {

/// The first difference between trees `a` and `b` as "path: what differs", or "" when every
/// directive matches: name, arguments (value, raw bytes, quotes), file, line, column, byte
/// offset, include chain, has_block, lua, lua_body(), include_below, and children.
inline std::string tree_diff(const config::list<config::directive>& a,
                             const config::list<config::directive>& b, const std::string& at = "") {
  if (a.size() != b.size())
    return at + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " children";
  for (std::size_t i = 0; i < a.size(); ++i) {
    const config::directive& x = a[i];
    const config::directive& y = b[i];
    const std::string here = at + "/" + std::string(x.name) + "@" + std::to_string(x.line);
    if (x.name != y.name || x.line != y.line || x.column != y.column || x.offset != y.offset ||
        x.file != y.file || x.chain != y.chain || x.has_block != y.has_block || x.lua != y.lua ||
        x.include_below != y.include_below || x.lua_body() != y.lua_body()) {
      return here + ": directive differs from " + std::string(y.name) + "@" +
             std::to_string(y.line);
    }
    if (x.args.size() != y.args.size()) return here + ": argument count differs";
    for (std::size_t k = 0; k < x.args.size(); ++k) {
      if (x.args[k].value() != y.args[k].value() || x.args[k].raw() != y.args[k].raw() ||
          x.args[k].quote() != y.args[k].quote()) {
        return here + ": argument " + std::to_string(k) + " differs";
      }
    }
    if (std::string d = tree_diff(x.block, y.block, here); !d.empty()) return d;
  }
  return "";
}

}  // namespace ngxtls::test
