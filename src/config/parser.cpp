// Actions and control for grammar/nginx.hpp: text -> per-file syntax tree.

#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

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
  std::vector<directive>* children;
  block_context context;
};

/// Everything the actions and the control share while one buffer is parsed.
struct parse_state {
  std::string_view buffer;
  const std::string& path;
  std::uint32_t file_index;
  std::size_t max_depth;
  std::vector<directive> root;
  std::vector<frame> stack;
  std::vector<argument> pending;  ///< words of the statement being read; [0] is the name
  std::size_t depth = 0;
  const char* quote_start = nullptr;  ///< opening quote of the token being read
  std::size_t quote_line = 1;
  std::size_t lua_line = 1;  ///< line of the last `{` seen in a Lua body (the module's start_line)

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
    if (p < lc_ptr) {
      // Back to an earlier byte (an action at the start of a Lua body runs after the
      // body's braces were seen): walk back over the distance only.
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
  std::size_t offset(const char* p) const { return static_cast<std::size_t>(p - buffer.data()); }

  /// nginx's "too long parameter" (ngx_conf_read_token): nginx refills its buffer keeping
  /// the bytes from the current token's start `s`; when it must read byte s+4096 while
  /// that start has not moved, the token does not fit. `last` is the last byte nginx
  /// reads before the start moves on; `quote_end` is where a quoted token closes (npos
  /// when unquoted or unclosed-unquoted).
  void check_length(std::size_t s, std::size_t last, std::size_t line, char quote,
                    std::size_t close) const {
    if (last < s + nginx_conf_buffer) return;
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

  void check_directive_end(std::size_t line, std::size_t column) {
    const directive_kind kind = kind_of(pending.front().value, stack.back().context);
    if (kind == directive_kind::block || kind == directive_kind::key_value ||
        kind == directive_kind::upstream) {
      fail(line, column, "directive \"" + pending.front().value + "\" has no opening \"{\"");
    }
  }
  directive_kind check_block_open(std::size_t line, std::size_t column) {
    if (stack.back().context == block_context::key_value) fail(line, column, "unexpected \"{\"");
    const directive_kind kind = kind_of(pending.front().value, stack.back().context);
    if (kind == directive_kind::simple) {
      fail(line, column, "directive \"" + pending.front().value + "\" is not terminated by \";\"");
    }
    return kind;
  }

  directive take_pending() {
    directive d;
    d.name = std::move(pending.front().value);
    d.file = file_index;
    d.line = pending.front().line;
    d.column = pending.front().column;
    d.args.reserve(pending.size() - 1);
    for (std::size_t i = 1; i < pending.size(); ++i) d.args.push_back(std::move(pending[i]));
    pending.clear();
    return d;
  }
};

template <typename Input>
void add_word(const Input& in, parse_state& st, quote_style quote) {
  argument a;
  a.raw.assign(in.begin(), in.size());
  const auto it = st.pos(in.begin());
  a.line = static_cast<std::uint32_t>(it.line);
  a.column = static_cast<std::uint32_t>(it.column);
  a.quote = quote;
  const std::size_t b = st.offset(in.begin());
  const std::size_t end = st.offset(in.end());
  if (quote == quote_style::none) {
    st.check_length(b, st.last_read_from(end), it.line, 0, std::string::npos);
    a.value = detail::unescape(a.raw);
  } else {
    const std::size_t close = end - 1;
    st.check_length(b + 1, st.last_read_from(end), it.line, a.raw.front(), close);
    a.value = detail::unescape(std::string_view(a.raw).substr(1, a.raw.size() - 2));
  }
  st.pending.push_back(std::move(a));
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
    st.stack.back().children->push_back(st.take_pending());
  }
};
template <>
struct action<g::block_open> {
  template <typename Input>
  static void apply(const Input& in, parse_state& st) {
    const auto p = st.pos(in.begin());
    const directive_kind kind = st.check_block_open(p.line, p.column);
    auto& children = *st.stack.back().children;
    children.push_back(st.take_pending());
    children.back().has_block = true;
    st.stack.push_back({&children.back().block, context_of(kind)});
  }
};
template <>
struct action<g::block_close> {
  template <typename Input>
  static void apply(const Input&, parse_state& st) {
    st.stack.pop_back();
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
    directive d = st.take_pending();
    // The body between the braces, verbatim (the module hands exactly these bytes to Lua).
    d.lua_body.emplace(in.begin() + 1, in.size() - 2);
    st.stack.back().children->push_back(std::move(d));
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
      st.quote_start = in.current();
      st.quote_line = st.pos(in.current()).line;
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
        st.check_length(s, st.buffer.size() - 1, st.quote_line, *st.quote_start, std::string::npos);
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
      st.fail(it.line, it.column, std::move(message));
    }
  }
};

}  // namespace

namespace detail {

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

std::vector<directive> parse_in_context(std::string_view content, const std::string& path,
                                        std::uint32_t file_index, block_context context,
                                        std::size_t max_depth, std::size_t start_depth) {
  parse_state st{content, path, file_index, max_depth, {}, {}, {}};
  st.depth = start_depth;
  st.stack.push_back({&st.root, context});
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
  return std::move(st.root);
}

}  // namespace detail

std::vector<directive> parse_buffer(std::string_view content, const std::string& path,
                                    std::uint32_t file_index) {
  return detail::parse_in_context(content, path, file_index, block_context::directives,
                                  load_options{}.max_depth);
}

}  // namespace ngxtls::config
