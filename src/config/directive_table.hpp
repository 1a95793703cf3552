#pragma once
// The part of nginx's directive table that decides syntax: which directives take a
// block, and which blocks hold key-value lines instead of directives . nginx reports these as
// syntax errors from ngx_conf_handler / ngx_conf_parse (src/core/ngx_conf_file.c), so the parser
// must know them.

#include <string_view>

namespace ngxtls::config {

/// What kind of block the parser is in; decides how a directive name is checked.
enum class block_context : unsigned char {
  directives,  ///< main, http, server, location, ...: children are directives
  key_value,   ///< map, geo, types, split_clients, charset_map, match: children are
               ///< plain lines read by a custom handler; a nested `{` is `unexpected "{"`
  upstream,    ///< upstream: `server` is the simple upstream server directive here
};

/// How nginx's table declares a directive name in a given context.
enum class directive_kind : unsigned char {
  unknown,    ///< not in our table: accepted with `;` or a block
  simple,     ///< must end with `;`: `directive "X" is not terminated by ";"`
  block,      ///< must have a block: `directive "X" has no opening "{"`
  key_value,  ///< a block whose children are key-value lines
  upstream,   ///< the upstream block
};

/// The kind of `name` (after unquoting) inside `context`. Names inside key-value
/// blocks are keys, not directives: always `unknown`. Sources: nginx 1.22 module
/// command tables (ngx_http_core_module.c, ngx_http_rewrite_module.c, ngx_http_map_module.c,
/// ngx_http_geo_module.c, ngx_http_split_clients_module.c, ngx_http_charset_filter_module.c,
/// ngx_http_upstream.c, the stream and mail equivalents) and lua-nginx-module's
/// `*_by_lua_block` (NGX_CONF_BLOCK|NGX_CONF_NOARGS).
directive_kind kind_of(std::string_view name, block_context context) noexcept;

/// The context a block of `kind` opens.
block_context context_of(directive_kind kind) noexcept;

}  // namespace ngxtls::config
