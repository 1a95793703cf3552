#pragma once
// nginx configuration syntax as PEGTL rules, read against nginx's own tokenizer
// (src/core/ngx_conf_file.c, ngx_conf_read_token; docs/nginx-facts.md#parsing) and, for
// `*_by_lua_block` bodies, against lua-nginx-module's block lexer
// (ngx_http_lua_conf_lua_block_parse). No actions, no I/O: src/config attaches
// actions and the control that turns each must<> point into nginx's message
// (see error_text below).
//
// The rules work on bytes: nothing is decoded, and a UTF-8 BOM is an ordinary
// byte sequence that ends up in the first directive's name, as in nginx.

#include <cstddef>
#include <string>
#include <tao/pegtl.hpp>

namespace ngxtls::grammar {

namespace pegtl = tao::pegtl;
using pegtl::any;
using pegtl::at;
using pegtl::eof;
using pegtl::must;
using pegtl::not_at;
using pegtl::not_one;
using pegtl::one;
using pegtl::plus;
using pegtl::seq;
using pegtl::sor;
using pegtl::star;

// ---------------------------------------------------------------------------
// Runs of ordinary bytes: one rule matches a whole run instead of one byte per rule
// call (the same language as plus<not_one<...>>, much faster on large configs).

/// One or more bytes for which `Set::test(byte)` holds. `Set::newlines` says whether a
/// run may contain a line feed (then position tracking counts lines in it).
template <typename Set>
struct run_of {
  using rule_t = run_of;
  using subs_t = pegtl::empty_list;

  template <pegtl::apply_mode A, pegtl::rewind_mode M, template <typename...> class Action,
            template <typename...> class Control, typename ParseInput, typename... States>
  static bool match(ParseInput& in, States&&... /*unused*/) {
    const char* p = in.current();
    const char* e = in.end();
    const char* q = p;
    while (q != e && Set::test(static_cast<unsigned char>(*q))) ++q;
    if (q == p) return false;
    if constexpr (Set::newlines) {
      in.bump(static_cast<std::size_t>(q - p));
    } else {
      in.bump_in_this_line(static_cast<std::size_t>(q - p));
    }
    return true;
  }
};

/// Bytes of an unquoted token that need no care: not white space, `;`, `{`, `\`, `$`.
struct bare_set {
  static constexpr bool newlines = false;
  static constexpr bool test(unsigned char c) {
    return c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != ';' && c != '{' && c != '\\' &&
           c != '$';
  }
};
/// Bytes inside double quotes other than the closing quote and a backslash.
struct dq_set {
  static constexpr bool newlines = true;
  static constexpr bool test(unsigned char c) { return c != '"' && c != '\\'; }
};
/// Bytes inside single quotes other than the closing quote and a backslash.
struct sq_set {
  static constexpr bool newlines = true;
  static constexpr bool test(unsigned char c) { return c != '\'' && c != '\\'; }
};
/// Bytes of a comment line.
struct comment_set {
  static constexpr bool newlines = false;
  static constexpr bool test(unsigned char c) { return c != '\n'; }
};
/// Lua bytes that cannot start a token the block lexer cares about (`--`, `[`, quotes, braces).
struct lua_set {
  static constexpr bool newlines = true;
  static constexpr bool test(unsigned char c) {
    return c != '{' && c != '}' && c != '-' && c != '[' && c != '"' && c != '\'';
  }
};

// ---------------------------------------------------------------------------
// Between tokens

/// Space, tab, CR, LF: the only bytes nginx treats as white space.
struct space : one<' ', '\t', '\r', '\n'> {};
/// `#` to the end of the line. nginx starts a comment only where a token
/// could start; inside a token `#` is an ordinary byte (see bare_word).
struct comment : seq<one<'#'>, pegtl::opt<run_of<comment_set>>> {};
/// What may sit between any two tokens (A10, A11).
struct separator : sor<plus<space>, comment> {};
struct separators : star<separator> {};

// ---------------------------------------------------------------------------
// Tokens

/// The byte after a backslash; any byte, a newline included. Missing only at end of file.
struct escaped_byte : any {};
/// A backslash keeps the next byte from ending or quoting anything (`\;`, `\ `, `\{`, `\"`).
struct escape : seq<one<'\\'>, must<escaped_byte>> {};
/// `$` followed by `{`: nginx does not end a token at a `{` right after `$`
/// (the flag stays set, so `${{` is kept too; A09).
struct variable : seq<one<'$'>, star<one<'{'>>> {};
/// Bytes that end an unquoted token.
struct bare_end : one<' ', '\t', '\r', '\n', ';', '{'> {};
/// Any other byte of an unquoted token: quotes, `#` and `}` are ordinary here (A14).
struct bare_byte : not_one<' ', '\t', '\r', '\n', ';', '{', '\\', '$'> {};
struct bare_part : sor<run_of<bare_set>, escape, variable> {};
/// An unquoted token. It cannot start with a quote (that opens a quoted token),
/// `}` (that closes a block) or `#` (a comment; consumed by separators first).
struct bare_word : seq<not_at<one<'"', '\'', '}', '#'>>, plus<bare_part>> {};

/// What must follow a closing quote: white space, `;`, `{` or `)`. Anything
/// else is `unexpected "X"` (A14b). The `)` starts the next token.
struct after_quote : at<one<' ', '\t', '\r', '\n', ';', '{', ')'>> {};

struct dq_open : one<'"'> {};
struct dq_close : one<'"'> {};
struct dq_body : star<sor<run_of<dq_set>, escape>> {};
/// A double-quoted token; `;`, `{`, `}` and `#` are plain text inside (A01, A04).
struct dq_word : seq<dq_open, dq_body, must<dq_close>, must<after_quote>> {};

struct sq_open : one<'\''> {};
struct sq_close : one<'\''> {};
struct sq_body : star<sor<run_of<sq_set>, escape>> {};
/// A single-quoted token, which may span lines (A08).
struct sq_word : seq<sq_open, sq_body, must<sq_close>, must<after_quote>> {};

/// One token: a directive name or an argument.
struct word : sor<dq_word, sq_word, bare_word> {};

// ---------------------------------------------------------------------------
// Directives and blocks

struct directive_end : one<';'> {};
struct block_open : one<'{'> {};
struct block_close : one<'}'> {};

struct statement;
/// The directives of a block, each followed by optional separators.
struct block_body : seq<separators, star<statement, separators>> {};
/// `{ ... }`; end of file before the `}` is `unexpected end of file, expecting "}"`.
struct block : seq<block_open, block_body, must<block_close>> {};
/// A directive ends with `;` or with a block; `}` or end of file here is an error.
struct statement_end : sor<directive_end, block> {};
/// Name and arguments, separated by white space or comments.
struct words : seq<word, separators, star<word, separators>> {};

// ---------------------------------------------------------------------------
// `*_by_lua_block` (lua-nginx-module): the body is Lua, not nginx syntax

struct lua_suffix : TAO_PEGTL_STRING("_by_lua_block") {};
/// One byte (or escape pair, or `${`) of an unquoted token, for scanning a name byte by byte.
struct bare_step : sor<escape, variable, bare_byte> {};
struct bare_lua_name
    : seq<not_at<one<'"', '\'', '}', '#'>>, plus<not_at<lua_suffix, sor<bare_end, eof>>, bare_step>,
          lua_suffix, at<sor<bare_end, eof>>> {};
struct dq_lua_name : seq<dq_open, plus<not_at<lua_suffix, dq_close>, sor<escape, not_one<'"'>>>,
                         lua_suffix, dq_close> {};
struct sq_lua_name : seq<sq_open, plus<not_at<lua_suffix, sq_close>, sor<escape, not_one<'\''>>>,
                         lua_suffix, sq_close> {};
/// A directive name ending in `_by_lua_block` (quoted or not; nginx compares the unquoted name).
struct lua_name : sor<bare_lua_name, dq_lua_name, sq_lua_name> {};
/// Look-ahead only: a lua block directive whose arguments end with `{`.
/// Ended with `;` instead, it is an ordinary statement that src/config rejects
/// with `directive "X" has no opening "{"`.
/// A fast pre-check for lua_head (which otherwise scans every directive name twice):
/// the bytes up to the next white space, `;` or `{` contain `_by_lua_block`. Consumes nothing.
struct lua_name_hint {
  using rule_t = lua_name_hint;
  using subs_t = pegtl::empty_list;

  template <pegtl::apply_mode A, pegtl::rewind_mode M, template <typename...> class Action,
            template <typename...> class Control, typename ParseInput, typename... States>
  static bool match(ParseInput& in, States&&... /*unused*/) {
    constexpr char suffix[] = "_by_lua_block";
    constexpr std::size_t n = sizeof(suffix) - 1;
    const char* p = in.current();
    const char* e = in.end();
    const char* q = p;
    while (q != e && *q != ' ' && *q != '\t' && *q != '\r' && *q != '\n' && *q != ';' && *q != '{')
      ++q;
    for (const char* c = p; c + n <= q; ++c) {
      if (*c == '_' && std::char_traits<char>::compare(c, suffix, n) == 0) return true;
    }
    return false;
  }
};
struct lua_head : seq<lua_name_hint, lua_name, separators, star<word, separators>, block_open> {};

/// A Lua long bracket `[[...]]`, `[==[...]==]` (Lua 5.1 manual, 2.1). Matches the
/// whole bracketed text; an opening bracket without its closing one raises
/// `lua_long_bracket_close` (lua-nginx-module: `Lua code block missing the closing long
/// bracket "]==]"`). Like the module, a `[` not followed by `=`* `[` is an ordinary byte.
struct lua_long_bracket_close {};
struct lua_long_bracket {
  using rule_t = lua_long_bracket;
  using subs_t = pegtl::empty_list;

  template <pegtl::apply_mode A, pegtl::rewind_mode M, template <typename...> class Action,
            template <typename...> class Control, typename ParseInput, typename... States>
  static bool match(ParseInput& in, States&&... st) {
    const std::size_t n = in.size(std::size_t(-1));
    const char* p = in.current();
    if (n < 2 || p[0] != '[') return false;
    std::size_t level = 0;
    std::size_t i = 1;
    while (i < n && p[i] == '=') ++i, ++level;
    if (i >= n || p[i] != '[') return false;
    for (std::size_t j = i + 1; j + level + 1 < n; ++j) {
      if (p[j] != ']') continue;
      std::size_t k = 1;
      while (k <= level && p[j + k] == '=') ++k;
      if (k == level + 1 && p[j + k] == ']') {
        in.bump(j + level + 2);
        return true;
      }
    }
    Control<lua_long_bracket_close>::raise(static_cast<const ParseInput&>(in), st...);
  }
};

struct lua_long_comment : seq<one<'-'>, one<'-'>, lua_long_bracket> {};
struct lua_line_comment : seq<one<'-'>, one<'-'>, star<not_one<'\n'>>> {};
/// lua-nginx-module's lexer: a backslash escapes any byte but a newline, and a short
/// string cannot span lines (measured on Debian's libnginx-mod-http-lua).
struct lua_escape : seq<one<'\\'>, not_one<'\n'>> {};
/// Where a parse remembers unterminated Lua short strings (a member `lua_quotes` of the
/// first parse state, when there is one): a line of n unterminated quotes was scanned to
/// its end from every quote, n squared steps for one line.
struct lua_quote_memo {
  /// A `"` (resp. `'`) before this byte, and after the one that set it, starts no string:
  /// the scan from the earlier quote reached the end of the line without a closing quote.
  const char* dq_dead_before = nullptr;
  const char* sq_dead_before = nullptr;
  const char* dq_dead_after = nullptr;
  const char* sq_dead_after = nullptr;
};

/// Lua short strings. An unterminated one is not a string token for the module's
/// lexer either: its quote is then an ordinary byte. As
/// `seq<one<Q>, star<sor<lua_escape, not_one<Q, '\n'>>>, one<Q>>`, with a memo: when the
/// scan from a quote fails, a later quote Q on the same line fails too (that quote was
/// the escaped byte of a `\Q` in the first scan, which goes on from the next byte exactly
/// as the second one does), so it is answered without scanning.
template <char Q>
struct lua_short_string {
  using rule_t = lua_short_string;
  using subs_t = pegtl::empty_list;

  template <typename State, typename... Rest>
  static lua_quote_memo* memo_of(State& st, Rest&...) {
    if constexpr (requires { st.lua_quotes; }) {
      return &st.lua_quotes;
    } else {
      return nullptr;
    }
  }

  template <pegtl::apply_mode A, pegtl::rewind_mode M, template <typename...> class Action,
            template <typename...> class Control, typename ParseInput, typename... States>
  static bool match(ParseInput& in, States&... st) {
    const char* p = in.current();
    const char* e = in.end();
    if (p == e || *p != Q) return false;
    lua_quote_memo* memo = nullptr;
    if constexpr (sizeof...(States) > 0) memo = memo_of(st...);
    const char** dead_before = nullptr;
    const char** dead_after = nullptr;
    if (memo != nullptr) {
      dead_before = Q == '"' ? &memo->dq_dead_before : &memo->sq_dead_before;
      dead_after = Q == '"' ? &memo->dq_dead_after : &memo->sq_dead_after;
      if (p > *dead_after && p < *dead_before) return false;
    }
    const char* q = p + 1;
    while (q != e && *q != '\n') {
      if (*q == Q) {
        in.bump(static_cast<std::size_t>(q + 1 - p));
        return true;
      }
      q += (*q == '\\' && q + 1 != e && q[1] != '\n') ? 2 : 1;
    }
    if (memo != nullptr) {
      *dead_after = p;
      *dead_before = q;
    }
    return false;
  }
};
struct lua_dq_string : lua_short_string<'"'> {};
struct lua_sq_string : lua_short_string<'\''> {};
struct lua_body;
struct lua_brace_open : one<'{'> {};
struct lua_brace_close : one<'}'> {};
/// A Lua table constructor or other `{...}`: nested, counted like the module's level.
struct lua_braces : seq<lua_brace_open, lua_body, must<lua_brace_close>> {};
/// Anything else: a run of plain Lua bytes, or one `-`, `[` or quote that starts no token.
struct lua_other : sor<run_of<lua_set>, not_one<'{', '}'>> {};
struct lua_body : star<sor<lua_long_comment, lua_line_comment, lua_long_bracket, lua_dq_string,
                           lua_sq_string, lua_braces, lua_other>> {};
/// End of file inside a Lua body is `unexpected end of file, expecting terminating
/// characters for lua code block`.
struct lua_block_open : one<'{'> {};
struct lua_block_close : one<'}'> {};
struct lua_block : seq<lua_block_open, lua_body, must<lua_block_close>> {};
struct lua_statement : seq<words, lua_block> {};

// ---------------------------------------------------------------------------
// Statements and the file

struct plain_statement : seq<words, must<statement_end>> {};
/// One directive. Lua block directives are recognised by name first.
struct statement : sor<seq<at<lua_head>, lua_statement>, plain_statement> {};
/// A `}`, `;` or `{` where a directive should start is `unexpected "X"`.
struct end_of_file : eof {};
/// A whole configuration file.
struct config_file : seq<separators, star<statement, separators>, must<end_of_file>> {};

// ---------------------------------------------------------------------------
// Messages at each must<> point, in nginx's words (ngx_conf_file.c; lua-nginx-module).

/// Error text for a failed must<Rule>: `at_eof` when the input ended there,
/// `otherwise` with `%c` standing for the offending byte. nullptr: no must<> point.
template <typename Rule>
struct error_text {
  static constexpr const char* at_eof = nullptr;
  static constexpr const char* otherwise = nullptr;
};

/// nginx's message for a directive cut short by the end of the file.
inline constexpr const char* eof_in_directive = "unexpected end of file, expecting \";\" or \"}\"";
/// nginx's message for a block cut short by the end of the file.
inline constexpr const char* eof_in_block = "unexpected end of file, expecting \"}\"";
/// nginx's message for a byte that cannot appear where it does.
inline constexpr const char* unexpected_byte = "unexpected \"%c\"";

template <>
struct error_text<escaped_byte> {
  static constexpr const char* at_eof = eof_in_directive;
  static constexpr const char* otherwise = eof_in_directive;
};
template <>
struct error_text<dq_close> {
  static constexpr const char* at_eof = eof_in_directive;
  static constexpr const char* otherwise = unexpected_byte;
};
template <>
struct error_text<sq_close> : error_text<dq_close> {};
template <>
struct error_text<after_quote> {
  static constexpr const char* at_eof = eof_in_directive;
  static constexpr const char* otherwise = unexpected_byte;
};
template <>
struct error_text<statement_end> {
  static constexpr const char* at_eof = eof_in_directive;
  static constexpr const char* otherwise = unexpected_byte;
};
template <>
struct error_text<block_close> {
  static constexpr const char* at_eof = eof_in_block;
  static constexpr const char* otherwise = unexpected_byte;
};
template <>
struct error_text<end_of_file> {
  static constexpr const char* at_eof = unexpected_byte;
  static constexpr const char* otherwise = unexpected_byte;
};
template <>
struct error_text<lua_block_close> {
  static constexpr const char* at_eof =
      "unexpected end of file, expecting terminating characters for lua code block";
  static constexpr const char* otherwise = at_eof;
};
template <>
struct error_text<lua_brace_close> : error_text<lua_block_close> {};
template <>
struct error_text<lua_long_bracket_close> {
  /// `%b` stands for the closing bracket (`]]`, `]==]`) matching the one at the error position.
  static constexpr const char* at_eof =
      "Lua code block missing the closing long bracket \"%b\", the inlined Lua code may be too "
      "long";
  static constexpr const char* otherwise = at_eof;
};

}  // namespace ngxtls::grammar
