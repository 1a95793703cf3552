#pragma once
// Internal entry point of the parser, shared by parse_buffer() and the loader.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/directive_table.hpp"
#include "config/tree.hpp"

namespace ngxtls::config::detail {

/// parse_buffer() with the block context the text is read in (an included file
/// inherits the context of its include site: a file included inside `map` holds
/// key-value lines) and the nesting limit. `start_depth` is the number of blocks already
/// open around the include site: the limit bounds the nesting across includes, which keeps
/// the parser's recursion plus the loader's within the stack. `content` must stay put as
/// long as `store` (the tree points into it); records go into `store`. A directive with
/// more than `max_args` arguments is an error, and so is a buffer of more than
/// `max_directives` directives (each is expanded at least once). Throws input_error.
list<directive> parse_in_context(std::string_view content, const std::string& path,
                                 std::uint32_t file_index, block_context context,
                                 std::size_t max_depth, std::size_t max_args,
                                 std::size_t max_directives, storage& store,
                                 std::size_t start_depth = 0);

/// nginx's unescaping of a token's bytes (ngx_conf_read_token): `\"` `\'` `\\` lose
/// the backslash, `\t` `\r` `\n` become control characters, other pairs are kept.
std::string unescape(std::string_view raw);

/// The error text of the max_directives limit (docs/limits.md), the same whether the parser or
/// the loader's include expansion reaches it.
std::string too_many_directives(std::size_t max_directives);

}  // namespace ngxtls::config::detail
