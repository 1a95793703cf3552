#pragma once
// The syntax tree: what src/config produces from nginx configuration text and what
// src/model reads. Input is bytes, never decoded (DESIGN, Syntax tree).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace ngxtls::config {

/// How an argument was written. nginx strips the quotes; crossplane output and --fix need them.
enum class quote_style : std::uint8_t { none, single_quote, double_quote };

/// One argument of a directive.
struct argument {
  std::string value;  ///< after nginx's unescaping: quotes removed, \" \' \\ reduced, \t \r \n expanded
  std::string raw;    ///< the bytes as written, quotes and backslashes included
  quote_style quote = quote_style::none;
  std::uint32_t line = 0;    ///< 1-based line of the argument's first byte
  std::uint32_t column = 0;  ///< 1-based byte column of the argument's first byte
};

/// One directive: a name, its arguments and an optional block.
/// In the expanded tree (`config::root`) `include` directives are replaced by the
/// directives of the files they name, each stamped with the include chain that brought it in.
struct directive {
  std::string name;          ///< as written (a UTF-8 BOM before the first directive stays part of it)
  std::uint32_t file = 0;    ///< index into config::files
  std::uint32_t line = 0;    ///< 1-based line of the name
  std::uint32_t column = 0;  ///< 1-based byte column of the name
  std::uint32_t chain = 0;   ///< index into config::chains; 0 = reached without any include
  std::vector<argument> args;
  bool has_block = false;          ///< true for `name args { ... }`, even when the block is empty
  std::vector<directive> block;    ///< children, when has_block
  std::vector<std::uint32_t> includes;  ///< per-file trees only: files an `include` named (config::files)
  /// `*_by_lua_block` bodies are not nginx syntax: the body between the braces is kept
  /// verbatim here as one raw string and `block` stays empty (DESIGN, Syntax tree);
  /// `has_block` is false for them, since the body holds no nginx directives.
  std::optional<std::string> lua_body;
};

/// One include site on the way to a directive: the `include` directive's location.
struct include_frame {
  std::uint32_t file = 0;  ///< index into config::files of the file that holds the include
  std::uint32_t line = 0;
  std::uint32_t column = 0;
};

/// One source file as read.
struct source_file {
  std::string path;                 ///< absolute or as given on the command line; "-" never appears (stdin dumps use the dump's paths)
  std::string content;              ///< the bytes read
  std::vector<directive> parsed;    ///< this file's own tree: include directives kept, with `includes` set
};

/// A whole configuration: the main file, every file it includes, and the expanded tree.
struct config {
  std::string conf_prefix;                        ///< directory include paths and ssl_* files resolve against
  std::vector<source_file> files;                 ///< files[0] is the main file; each file read once
  std::vector<std::vector<include_frame>> chains; ///< chains[0] is empty; outermost include first
  std::vector<directive> root;                    ///< expanded tree (includes inlined at every site)

  /// The location of a directive, as file:line:col.
  source_location where(const directive& d) const;
  /// The include chain of a directive as locations, outermost first.
  std::vector<source_location> chain_of(const directive& d) const;
};

}  // namespace ngxtls::config
