// Actions and control for grammar/nginx.hpp: text -> per-file syntax tree.

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "config/loader.hpp"
#include "config/parse_internal.hpp"
#include "grammar/nginx.hpp"

namespace ngxtls::config {

namespace {

namespace g = ngxtls::grammar;
namespace pegtl = tao::pegtl;

/// nginx reads a configuration through a 4096-byte buffer (NGX_CONF_BUFFER in
/// ngx_conf_file.c); a token or comment that does not fit is "too long parameter".
constexpr std::size_t nginx_conf_buffer = 4096;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

struct frame {
  std::size_t first;  ///< index in parse_state::open of the block's first child
  block_context context;
};

/// Everything the actions and the control share while one buffer is parsed.
struct parse_state {
  std::string_view buffer;
  const std::string& path;
  std::uint32_t file_index;
  std::size_t max_depth;
  std::size_t max_args;
  std::size_t max_directives;
  std::size_t directives = 0;
  storage& store;
  /// Directives of the blocks still open, outermost first: a block's children are copied
  /// into storage as one run when it closes, so siblings stay contiguous.
  std::vector<directive> open;
  std::vector<frame> stack;
  std::vector<argument> pending;  ///< words of the statement being read; [0] is the name
  /// Arguments of the statement being read past max_args: counted, not kept, so that the
  /// limit holds while the statement is read (the error names the full count).
  std::size_t args_past_limit = 0;
  std::uint32_t name_line = 0;  ///< position of pending[0]
  std::uint32_t name_column = 0;
  std::size_t name_offset = 0;
  std::size_t depth = 0;
  const char* quote_start = nullptr;  ///< opening quote of the token being read
  std::size_t lua_line = 1;  ///< line of the last `{` seen in a Lua body (the module's start_line)
  g::lua_quote_memo lua_quotes{};  ///< unterminated Lua strings seen (g::lua_short_string)
  /// The first block opened by a name the parser does not know as a block directive, in
  /// reading order (see fail_syntax); no name when none.
  struct opener {
    std::optional<std::string_view> name;
    std::uint32_t line = 0, column = 0;
  } unknown_block{};

  /// Line and byte column (1-based) of `p`, counted on from the previous call: actions run
  /// in text order, so the whole buffer is scanned about once (PEGTL's eager tracking paid
  /// for every byte matched, backtracking included). A position before the last one walks
  /// back over the distance.
  struct line_col {
    std::size_t line, column;
  };
  const char* lc_ptr = nullptr;
  const char* lc_line_start = nullptr;
  std::size_t lc_line = 1;
  line_col pos(const char* p) {
    if (lc_ptr == nullptr) {
      lc_ptr = lc_line_start = buffer.data();
      lc_line = 1;
    }
    if (p < lc_ptr && p >= lc_line_start) {
      lc_ptr = p;  // back within the current line (a quoted name read ahead by lua_head)
    } else if (p < lc_ptr) {
      // Back to an earlier line (an action at the start of a Lua body runs after the
      // body's braces were seen): walk back over the distance, then to that line's start.
      for (const char* q = p; q < lc_ptr; ++q)
        if (*q == '\n') --lc_line;
      const char* start = p;
      while (start > buffer.data() && start[-1] != '\n') --start;
      lc_line_start = start;
      lc_ptr = p;
    }
    for (const char* q = lc_ptr; q < p;) {
      q = static_cast<const char*>(std::memchr(q, '\n', static_cast<std::size_t>(p - q)));
      if (q == nullptr) break;
      ++lc_line;
      lc_line_start = ++q;
    }
    lc_ptr = p;
    return {lc_line, static_cast<std::size_t>(p - lc_line_start) + 1};
  }

  [[noreturn]] void fail(std::size_t line, std::size_t column, std::string message) const {
    throw input_error({path, static_cast<std::uint32_t>(line), static_cast<std::uint32_t>(column)},
                      std::move(message));
  }

  /// fail() for a syntax error, with the blocks still open: nginx reads directives in order
  /// and stops at the first it cannot take, so a block opened by a directive that takes no
  /// block (a `{` inside an unquoted argument, such as the quantifier of `\d{4}`) is where
  /// `nginx -t` stops, before the syntax error it leads to; and an end of file inside a block
  /// names where that block was opened.
  [[noreturn]] void fail_syntax(std::size_t line, std::size_t column, std::string message) const {
    input_error e({path, static_cast<std::uint32_t>(line), static_cast<std::uint32_t>(column)},
                  std::move(message));
    // Only for an unbalanced brace: a stray `{` shows up as an unexpected `}` or end of file.
    const bool brace =
        e.message().rfind("unexpected end of file", 0) == 0 || e.message() == "unexpected \"}\"";
    if (brace && unknown_block.name) {
      const std::string name(*unknown_block.name);
      e.add_related({{path, unknown_block.line, unknown_block.column},
                     "\"" + name +
                         "\" opens a block, which nginx stops at first (nginx -t: unknown "
                         "directive \"" +
                         name + "\", or directive \"" + name +
                         "\" is not terminated by \";\"), unless a loaded module makes it a "
                         "block directive; a \"{\" in an unquoted argument (a regex such as "
                         "\\d{4}) opens a block: quote the argument",
                     true});
    }
    if (stack.size() > 1 && e.message().rfind("unexpected end of file", 0) == 0) {
      const directive& opener = open[stack.back().first - 1];
      e.add_related(
          {{path, opener.line, opener.column},
           "the \"" + std::string(opener.name.view()) + "\" block opened here is not closed",
           false});
    }
    throw e;
  }
  std::size_t offset(const char* p) const { return static_cast<std::size_t>(p - buffer.data()); }

  /// nginx's "too long parameter" (ngx_conf_read_token): nginx refills its buffer keeping
  /// the bytes from the current token's start `s`; when it must read byte s+4096 while
  /// that start has not moved, the token does not fit. `last` is the last byte nginx
  /// reads before the start moves on; `quote_end` is where a quoted token closes (npos
  /// when unquoted or unclosed-unquoted).
  void check_length(std::size_t s, std::size_t last, std::size_t line, char quote,
                    std::size_t close) const {
    if (last < s + nginx_conf_buffer) return;
    if (line == 0) line = locate(buffer, s).line;
    if (quote != 0 && s + nginx_conf_buffer <= close) {
      fail(line, 0,
           std::string("too long parameter, probably missing terminating \"") + quote +
               "\" character");
    }
    fail(line, 0, "too long parameter \"" + std::string(buffer.substr(s, 10)) + "...\" started");
  }

  /// The last byte nginx reads under a token's start when the token's bytes end before
  /// `next` (the terminator of an unquoted token, or the byte after a closing quote).
  std::size_t last_read_from(std::size_t next) const {
    if (next >= buffer.size()) return buffer.size() - 1;
    // After white space nginx reads one more byte before it moves the start; `;` and `{`
    // end the call at once; `)` after a quote starts the next token itself.
    if (is_space(buffer[next])) return std::min(next + 1, buffer.size() - 1);
    return next;
  }

  std::string name_text() const { return std::string(pending.front().value()); }
  void check_directive_end(std::size_t line, std::size_t column) {
    const directive_kind kind = kind_of(pending.front().value(), stack.back().context);
    if (kind == directive_kind::block || kind == directive_kind::key_value ||
        kind == directive_kind::upstream) {
      fail(line, column, "directive \"" + name_text() + "\" has no opening \"{\"");
    }
  }
  directive_kind check_block_open(std::size_t line, std::size_t column) {
    if (stack.back().context == block_context::key_value) fail(line, column, "unexpected \"{\"");
    const directive_kind kind = kind_of(pending.front().value(), stack.back().context);
    if (kind == directive_kind::simple) {
      fail(line, column, "directive \"" + name_text() + "\" is not terminated by \";\"");
    }
    return kind;
  }

  /// The statement read so far as a directive; `lua_body` is kept past the arguments.
  directive take_pending(std::optional<std::string_view> lua_body = std::nullopt) {
    const std::size_t nargs = pending.size() - 1 + args_past_limit;
    if (nargs > max_args) {
      fail(name_line, name_column,
           "directive \"" + name_text() + "\" has " + std::to_string(nargs) +
               " arguments, more than the limit of " + std::to_string(max_args) +
               " (max_args_per_directive)");
    }
    if (++directives > max_directives) {
      // Before the records pile up: a file of ten million `a;` must fail, not fill memory.
      fail(name_line, name_column, detail::too_many_directives(max_directives));
    }
    directive d;
    d.name = pending.front().value();
    d.file = file_index;
    d.line = name_line;
    d.column = name_column;
    d.offset = static_cast<std::uint32_t>(name_offset);
    if (lua_body) {
      if (lua_body->size() > argument::max_bytes) {
        fail(name_line, name_column,
             "the body of \"" + name_text() + "\" is longer than " +
                 std::to_string(argument::max_bytes) + " bytes");
      }
      d.lua = true;
      pending.push_back(argument::literal(*lua_body));
      d.args = store.copy(pending.data() + 1, nargs + 1);
      d.args = list<argument>(d.args.data(), static_cast<std::uint32_t>(nargs));
    } else {
      d.args = store.copy(pending.data() + 1, nargs);
    }
    pending.clear();
    return d;
  }
  void add_child(const directive& d) { open.push_back(d); }
  /// Closes the innermost block: its children go into storage as one run.
  void close_block() {
    const std::size_t first = stack.back().first;
    stack.pop_back();
    directive& parent = open[first - 1];
    bool below = false;
    for (std::size_t i = first; i < open.size(); ++i)
      below = below || open[i].include_below || (open[i].name == "include" && !open[i].has_block);
    parent.block = store.copy(open.data() + first, open.size() - first);
    parent.include_below = below;
    open.resize(first);
  }
};

template <typename Input>
void add_word(const Input& in, parse_state& st, quote_style quote) {
  const std::string_view raw(in.begin(), in.size());
  const std::size_t b = st.offset(in.begin());
  const std::size_t end = st.offset(in.end());
  std::size_t line = 0;  // for errors only: worked out when one is raised
  if (st.pending.empty()) {
    // Only a directive's name needs its position now; an argument's is worked out from
    // its bytes when reported (config::where).
    const auto p = st.pos(in.begin());
    line = p.line;
    st.name_line = static_cast<std::uint32_t>(line);
    st.name_column = static_cast<std::uint32_t>(p.column);
    st.name_offset = b;
  }
  std::string_view inner = raw;
  if (quote == quote_style::none) {
    st.check_length(b, st.last_read_from(end), line, 0, std::string::npos);
  } else {
    const std::size_t close = end - 1;
    st.check_length(b + 1, st.last_read_from(end), line, raw.front(), close);
    inner = raw.substr(1, raw.size() - 2);
  }
  if (st.pending.size() > st.max_args) {
    ++st.args_past_limit;  // take_pending() fails with the count
  } else if (inner.find('\\') == std::string_view::npos) {
    st.pending.push_back(argument_builder::make(raw, inner, quote, st.store));
  } else {
    const std::string value = detail::unescape(inner);
    st.pending.push_back(argument_builder::make(raw, value, quote, st.store));
  }
}

template <typename Rule>
struct action : pegtl::nothing<Rule> {};

template <>
struct action<g::bare_word> {
  template <typename Input>
  static void apply(const Input& in, parse_state& st) {
    add_word(in, st, quote_style::none);
  }
};
template <>
struct action<g::dq_word> {
  template <typename Input>
  static void apply(const Input& in, parse_state& st) {
    add_word(in, st, quote_style::double_quote);
  }
};
template <>
struct action<g::sq_word> {
  template <typename Input>
  static void apply(const Input& in, parse_state& st) {
    add_word(in, st, quote_style::single_quote);
  }
};
template <>
struct action<g::comment> {
  template <typename Input>
  static void apply(const Input& in, parse_state& st) {
    const std::size_t b = st.offset(in.begin());
    const std::size_t end = st.offset(in.end());
    // The LF that ends a comment is read under the comment's start; at end of file
    // the last byte is.
    const std::size_t last = end < st.buffer.size() ? end : st.buffer.size() - 1;
    st.check_length(b, last, st.pos(in.begin()).line, 0, std::string::npos);
  }
};
template <>
struct action<g::directive_end> {
  template <typename Input>
  static void apply(const Input& in, parse_state& st) {
    const auto p = st.pos(in.begin());
    st.check_directive_end(p.line, p.column);
    st.add_child(st.take_pending());
  }
};
template <>
struct action<g::block_open> {
  template <typename Input>
  static void apply(const Input& in, parse_state& st) {
    const auto p = st.pos(in.begin());
    const directive_kind kind = st.check_block_open(p.line, p.column);
    directive d = st.take_pending();
    if (kind == directive_kind::unknown && !st.unknown_block.name &&
        st.stack.back().context != block_context::key_value)
      st.unknown_block = {d.name.view(), d.line, d.column};
    d.has_block = true;
    st.add_child(d);
    st.stack.push_back({st.open.size(), context_of(kind)});
  }
};
template <>
struct action<g::block_close> {
  template <typename Input>
  static void apply(const Input&, parse_state& st) {
    st.close_block();
  }
};
template <>
struct action<g::lua_block_open> {
  template <typename Input>
  static void apply(const Input& in, parse_state& st) {
    const auto p = st.pos(in.begin());
    st.check_block_open(p.line, p.column);
  }
};
template <>
struct action<g::lua_block> {
  template <typename Input>
  static void apply(const Input& in, parse_state& st) {
    // The body between the braces, verbatim (the module hands exactly these bytes to Lua).
    st.add_child(st.take_pending(std::string_view(in.begin() + 1, in.size() - 2)));
  }
};

template <typename Rule>
inline constexpr bool is_nesting =
    std::is_same_v<Rule, g::block> || std::is_same_v<Rule, g::lua_block> ||
    std::is_same_v<Rule, g::lua_braces>;

template <typename Rule>
struct control : pegtl::normal<Rule> {
  template <typename ParseInput>
  static void start(const ParseInput& in, parse_state& st) {
    if constexpr (is_nesting<Rule>) {
      // Guard the recursion of block -> statement -> block before the stack runs out.
      if (++st.depth > st.max_depth) {
        const auto p = st.pos(in.current());
        st.fail(p.line, p.column,
                "blocks nested deeper than the limit of " + std::to_string(st.max_depth) +
                    " (max_depth)");
      }
    } else if constexpr (std::is_same_v<Rule, g::dq_word> || std::is_same_v<Rule, g::sq_word>) {
      st.quote_start = in.current();  // its line is worked out if the quote stays open
    }
  }
  template <typename ParseInput>
  static void success(const ParseInput& in, parse_state& st) {
    if constexpr (is_nesting<Rule>) --st.depth;
    if constexpr (std::is_same_v<Rule, g::lua_block_open> ||
                  std::is_same_v<Rule, g::lua_brace_open>) {
      st.lua_line = st.pos(in.current()).line;
    }
  }
  template <typename ParseInput>
  static void failure(const ParseInput&, parse_state& st) {
    if constexpr (is_nesting<Rule>) --st.depth;
  }

  template <typename ParseInput>
  [[noreturn]] static void raise(const ParseInput& in, parse_state& st) {
    using text = g::error_text<Rule>;
    const auto it = st.pos(in.current());
    if constexpr (text::at_eof == nullptr) {
      st.fail(it.line, it.column, "syntax error");
    } else {
      const bool eof = in.empty();
      if constexpr (std::is_same_v<Rule, g::dq_close> || std::is_same_v<Rule, g::sq_close>) {
        // An unclosed quote: nginx reads on to the end of the file, which may not fit.
        const std::size_t s = st.offset(st.quote_start) + 1;
        st.check_length(s, st.buffer.size() - 1, 0, *st.quote_start, std::string::npos);
      }
      if constexpr (std::is_same_v<Rule, g::lua_block_close> ||
                    std::is_same_v<Rule, g::lua_brace_close>) {
        // lua-nginx-module reports the line of the last `{` it saw.
        st.fail(st.lua_line, 0, text::at_eof);
      }
      std::string message = eof ? text::at_eof : text::otherwise;
      if (auto p = message.find("%c"); p != std::string::npos) {
        message.replace(p, 2, eof ? std::string() : std::string(1, in.peek_char()));
      }
      if (auto p = message.find("%b"); p != std::string::npos) {
        // The closing long bracket that matches the opening one here: `[==[` -> `]==]`.
        std::string close = "]";
        for (const char* c = in.current() + 1; c < in.end() && *c == '='; ++c) close += '=';
        message.replace(p, 2, close + "]");
      }
      st.fail_syntax(it.line, it.column, std::move(message));
    }
  }
};

}  // namespace

namespace detail {

std::string too_many_directives(std::size_t max_directives) {
  return "more than " + std::to_string(max_directives) +
         " directives after expanding includes (max_directives)";
}

std::string unescape(std::string_view raw) {
  if (raw.find('\\') == std::string_view::npos) return std::string(raw);
  std::string out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '\\' && i + 1 < raw.size()) {
      switch (raw[i + 1]) {
        case '"':
        case '\'':
        case '\\':
          out += raw[++i];
          continue;
        case 't':
          out += '\t';
          ++i;
          continue;
        case 'r':
          out += '\r';
          ++i;
          continue;
        case 'n':
          out += '\n';
          ++i;
          continue;
        default:
          break;
      }
    }
    out += c;
  }
  return out;
}

list<directive> parse_in_context(std::string_view content, const std::string& path,
                                 std::uint32_t file_index, block_context context,
                                 std::size_t max_depth, std::size_t max_args,
                                 std::size_t max_directives, storage& store,
                                 std::size_t start_depth) {
  parse_state st{content, path,  file_index, max_depth, max_args, max_directives,
                 0,       store, {},         {},        {}};
  st.depth = start_depth;
  st.stack.push_back({0, context});
  pegtl::memory_input<pegtl::tracking_mode::lazy, pegtl::eol::lf_crlf> in(content.data(),
                                                                          content.size(), path);
  try {
    pegtl::parse<g::config_file, action, control>(in, st);
  } catch (const pegtl::parse_error& e) {
    // Only raised by rules without a message; the control turns all others into input_error.
    const auto& pos = e.positions().front();
    throw input_error(
        {path, static_cast<std::uint32_t>(pos.line), static_cast<std::uint32_t>(pos.column)},
        "syntax error");
  }
  return store.copy(st.open.data(), st.open.size());
}

}  // namespace detail

parsed_buffer parse_buffer(std::string_view content, const std::string& path,
                           std::uint32_t file_index) {
  parsed_buffer out;
  out.store = std::make_shared<storage>();
  out.content = out.store->adopt(content);
  const load_options defaults;
  out.directives = detail::parse_in_context(
      out.content, path, file_index, block_context::directives, defaults.max_depth,
      defaults.max_args_per_directive, defaults.max_directives, *out.store);
  return out;
}

}  // namespace ngxtls::config
