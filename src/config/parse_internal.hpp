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
/// `max_directives` directives (each is expanded at least once). A buffer of at least
/// `parallel_min_bytes` is cut at `server {` lines and the pieces parsed on other threads
/// (same tree, same errors; see ahead_run in parser.cpp). With `detach`, names are
/// interned and values_kept() values copied into `store`, so that the tree's common reads
/// touch no byte of `content` (a mapped file whose pages the loader then drops; the tree is
/// equal either way). Throws input_error.
list<directive> parse_in_context(std::string_view content, const std::string& path,
                                 std::uint32_t file_index, block_context context,
                                 std::size_t max_depth, std::size_t max_args,
                                 std::size_t max_directives, storage& store,
                                 std::size_t start_depth = 0,
                                 std::size_t parallel_min_bytes = std::string_view::npos,
                                 bool detach = false);

/// How many times a parse has taken over statements parsed on other threads, since the
/// program started (tests check that the parallel path ran).
std::size_t parallel_splices();

/// nginx's unescaping of a token's bytes (ngx_conf_read_token): `\"` `\'` `\\` lose
/// the backslash, `\t` `\r` `\n` become control characters, other pairs are kept.
std::string unescape(std::string_view raw);

/// The error text of the max_directives limit (docs/limits.md), the same whether the parser or
/// the loader's include expansion reaches it.
std::string too_many_directives(std::size_t max_directives);

}  // namespace ngxtls::config::detail
