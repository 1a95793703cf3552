#pragma once
// `ngxtls parse` output: crossplane's JSON shape and our own syntax-tree JSON.

#include <ostream>
#include <string>

#include "base/error.hpp"
#include "config/tree.hpp"

namespace ngxtls::report {

/// crossplane 0.5.7's `crossplane parse` JSON: `status`, `errors`, `config[]` with `file`,
/// `status`, `errors`, `parsed[]` of `directive`, `line`, `args`, `block` (block directives
/// only) and `includes` (include directives, unless `single_file`: indices into config[]).
/// Args carry nginx's values (quotes removed, escapes resolved as nginx does), which is
/// where we differ from crossplane on purpose; a `*_by_lua_block` body is the last arg.
/// `single_file` lists files[0] alone. Bytes that are not UTF-8 become U+FFFD.
std::string render_crossplane(const config::config& cfg, bool single_file);
/// render_crossplane() written to `out` a directive at a time (the same bytes; a 20 MB
/// config's JSON is never one document in memory).
void write_crossplane(const config::config& cfg, bool single_file, std::ostream& out);

/// crossplane's failed-status JSON for an input error: `status` "failed", `errors`
/// [{`file`, `error` ("MESSAGE in FILE:LINE"), `line`}], one `config` entry with the same error.
std::string render_crossplane_error(const input_error& e);

/// Our tree: `conf_prefix`; `files` [{`path`, `bytes`}]; `chains` (each a list of
/// {`file`, `line`, `column`} include sites, outermost first; chains[0] is empty); and
/// `directives`: the expanded tree (or files[0]'s own tree when `single_file`), each with
/// `name`, `file`, `line`, `column`, `chain`, `args` [{`value`, `raw`, `quote`
/// ("none"|"single"|"double"), `line`, `column`}], `block` (block directives only) and
/// `lua_body` (`*_by_lua_block`). Bytes that are not UTF-8 become U+FFFD.
std::string render_tree_json(const config::config& cfg, bool single_file);
/// render_tree_json() written to `out` a directive at a time (the same bytes).
void write_tree_json(const config::config& cfg, bool single_file, std::ostream& out);

}  // namespace ngxtls::report
