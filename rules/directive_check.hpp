#pragma once
// nginx's directive table as data, and the walk that checks a configuration against it the
// way ngx_conf_handler (src/core/ngx_conf_file.c) does before any directive handler runs:
// unknown name, name not allowed in this context, wrong number of arguments.
// Shared by the rules unknown-directive, directive-not-allowed-here and directive-arguments.

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.hpp"

namespace ngxtls::rules::directives {

/// The contexts a directive can appear in (bits), named as in nginx's table
/// (NGX_MAIN_CONF, NGX_EVENT_CONF, NGX_HTTP_MAIN_CONF, NGX_HTTP_SRV_CONF, NGX_HTTP_LOC_CONF,
/// NGX_HTTP_SIF_CONF, NGX_HTTP_LIF_CONF, NGX_HTTP_LMT_CONF, NGX_HTTP_UPS_CONF,
/// NGX_STREAM_MAIN_CONF, NGX_STREAM_SRV_CONF, NGX_STREAM_UPS_CONF).
enum class ctx : std::uint16_t {
  main = 1 << 0,
  events = 1 << 1,
  http = 1 << 2,
  server = 1 << 3,
  location = 1 << 4,
  if_server = 1 << 5,
  if_location = 1 << 6,
  limit_except = 1 << 7,
  upstream = 1 << 8,
  stream = 1 << 9,
  stream_server = 1 << 10,
  stream_upstream = 1 << 11,
};
/// The context names used in the data files ("main", "if_server", ...), or nullopt.
std::optional<ctx> parse_ctx(std::string_view name);
/// "main", "http", "server", "location", "if in server", ...: how messages name a context.
std::string describe(ctx c);

/// One directive of nginx's table.
struct entry {
  std::string name;
  std::uint16_t contexts = 0;    ///< bits of ctx
  bool block = false;            ///< takes a `{ }` block (NGX_CONF_BLOCK)
  std::uint16_t arg_counts = 0;  ///< bit n: n arguments pass nginx's count check; bit 8 = 8 or more
  std::string module;            ///< "core" (built into nginx), "stream", "lua", "ndk"
  std::string since;             ///< first nginx version with it ("" = 1.22.1 or earlier)
};

/// The table for nginx 1.22.1 as measured from Debian's nginx (rules/data/
/// nginx-1.22.1-directives.tsv, tools/probe_directive_table.py), plus directives added after
/// 1.22.1 and version facts from nginx CHANGES (directive_check.cpp).
const std::vector<entry>& table();
/// The entry for `name`, or null.
const entry* find(std::string_view name);
/// The TSV text of rules/data/nginx-1.22.1-directives.tsv, embedded at build time
/// (cmake/embed_directive_table.cmake).
std::string_view embedded_tsv();

/// A module not in the measured table whose directives nginx reports as unknown unless the
/// module is loaded (load_module) or built in; `module` is the name `.ngxtls.toml` uses.
/// nullopt when no known module owns `name`.
std::optional<std::string> owning_module(std::string_view name);
/// The module a `load_module` path loads ("modules/ngx_http_lua_module.so" -> "lua"), or the
/// file's stem when we do not know it.
std::string module_of_load(std::string_view path);

/// What the walk found.
enum class problem { unknown, not_allowed, arguments };
struct issue {
  problem kind;
  const config::directive* where;
  std::string message;
  engine::severity level;
};

/// Checks the whole configuration of the context's model: the expanded tree, starting in the
/// main context, or, for a file that holds no `events`/`http`/`stream` block and whose top
/// level is not valid there, in the first of http and server that fits (how a snippet meant
/// for `include` is read; the corpus verdicts were measured the same way).
/// Modules: those loaded with `load_module` plus `.ngxtls.toml` `modules`.
/// Each of the three rules walks once and keeps its own kind (cheap: one pass over the tree).
/// `start` forces the context of the main file's top level (tests replaying how nginx read a
/// corpus file); nullopt infers it as described above.
/// At most engine::max_findings_per_rule issues of each kind are kept; `dropped`, when
/// given, receives the count of the rest per kind (indexed by `problem`).
std::vector<issue> issues(const engine::context& c, std::optional<ctx> start = std::nullopt,
                          std::array<std::size_t, 3>* dropped = nullptr);
/// issues(c) and the counts past the cap, computed once per engine run and shared by the
/// three directive rules.
struct issue_set {
  std::vector<issue> issues;
  std::array<std::size_t, 3> dropped{};  ///< per `problem`, issues not kept
};
const issue_set& shared_issues(const engine::context& c);

}  // namespace ngxtls::rules::directives
