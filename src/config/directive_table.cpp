#include "config/directive_table.hpp"

#include <array>

namespace ngxtls::config {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// NGX_CONF_BLOCK directives of nginx 1.22 (core, http, stream, mail) whose
// children are directives.
constexpr std::array<std::string_view, 7> directive_blocks = {
    "events", "http", "stream", "mail", "server", "location", "if"};
// ... and limit_except, whose children are directives too.
constexpr std::string_view limit_except = "limit_except";

// Blocks read by a custom handler (cf->handler): map, geo, types, split_clients,
// charset_map; and `match` (NGINX Plus health checks), whose body is key-value lines too.
constexpr std::array<std::string_view, 6> key_value_blocks = {
    "map", "geo", "types", "split_clients", "charset_map", "match"};

// Directives we know end with `;` in every context where they are allowed. Kept
// short on purpose: a third-party module may reuse a name, and a false "not
// terminated" is worse than a missed one.
constexpr std::array<std::string_view, 3> simple_directives = {"include", "listen", "server_name"};

}  // namespace

directive_kind kind_of(std::string_view name, block_context context) noexcept {
  if (context == block_context::key_value) return directive_kind::unknown;
  if (context == block_context::upstream && name == "server") return directive_kind::simple;
  for (auto b : directive_blocks)
    if (name == b) return directive_kind::block;
  if (name == limit_except) return directive_kind::block;
  if (name == "upstream") return directive_kind::upstream;
  for (auto b : key_value_blocks)
    if (name == b) return directive_kind::key_value;
  if (ends_with(name, "_by_lua_block")) return directive_kind::block;
  for (auto s : simple_directives)
    if (name == s) return directive_kind::simple;
  // Every ssl_* directive of nginx's http, stream and mail ssl modules is a simple one.
  if (name.substr(0, 4) == "ssl_") return directive_kind::simple;
  return directive_kind::unknown;
}

block_context context_of(directive_kind kind) noexcept {
  switch (kind) {
    case directive_kind::key_value:
      return block_context::key_value;
    case directive_kind::upstream:
      return block_context::upstream;
    default:
      return block_context::directives;
  }
}

}  // namespace ngxtls::config
