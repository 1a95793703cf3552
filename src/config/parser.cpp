// Actions and control for grammar/nginx.hpp: text -> per-file syntax tree.

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
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

/// Statements parsed ahead on other threads (large files): pieces [at, resume) of the
/// buffer cut at lines that look like `server {`, each parsed as the children of a
/// `directives` block at `depth`. The serial parse takes them over when it reaches `at` as
/// a statement start in that same context and depth (splice_here); otherwise they are
/// dropped. Each piece must parse on its own to its end, so no token, quote, comment or
/// Lua body crosses a cut, and PEG parsing is deterministic: the pieces' statements are
/// exactly the ones the serial parse would read there (tests/unit/test_parallel_parse.cpp
/// compares whole trees and errors both ways).
struct ahead_run {
  struct piece {
    const char* begin = nullptr;
    const char* end = nullptr;
    storage store;
    std::vector<directive> top;  ///< the piece's statements, their blocks in `store`
    std::size_t directives = 0;
    bool ok = false;  ///< parsed to its end without error
  };
  const char* at = nullptr;
  const char* resume = nullptr;
  std::size_t depth = 0;  ///< pieces parse as if this many blocks were open (see splice_here)
  std::vector<std::unique_ptr<piece>> pieces;
  std::vector<std::thread> threads;
  /// Set once the pieces are of no use (the serial parse went past `at`, a piece failed,
  /// the parse ended): they stop at their next statement.
  std::atomic<bool> cancel{false};

  void join() {
    for (auto& t : threads)
      if (t.joinable()) t.join();
  }
  ~ahead_run() {
    cancel = true;
    join();
  }
};

/// Thrown inside a piece's parse when its run was cancelled.
struct piece_cancelled {};

/// Thrown when the pieces would take the buffer past max_directives: the buffer is parsed
/// again without them, so that the error names the directive the serial parse stops at.
struct retry_serially {};

std::atomic<std::size_t> splices{0};

/// One copy in storage of each distinct directive name of a parse (load_options::map_min_bytes):
/// names then point there, not into the file, and reading them (the model and every rule
/// do) reads no page of a mapped file back.
class name_interner {
 public:
  /// Distinct names kept at most: a file of a million distinct unknown names would make the
  /// table outgrow the bytes it saves; names past the limit stay views into the file.
  static constexpr std::size_t max_names = 4096;

  std::string_view intern(std::string_view name, storage& store) {
    if (slots_.empty()) slots_.resize(256);
    const std::size_t h = std::hash<std::string_view>{}(name);
    std::size_t at = h & (slots_.size() - 1);
    for (; slots_[at].data != nullptr; at = (at + 1) & (slots_.size() - 1)) {
      const slot& e = slots_[at];
      if (e.hash == h && std::string_view(e.data, e.size) == name) return {e.data, e.size};
    }
    if (count_ >= max_names) return name;
    char* p = store.allocate<char>(std::max<std::size_t>(name.size(), 1));
    if (!name.empty()) std::memcpy(p, name.data(), name.size());
    slots_[at] = {h, p, name.size()};
    if (++count_ * 2 > slots_.size()) grow();
    return {p, name.size()};
  }

 private:
  struct slot {
    std::size_t hash = 0;
    const char* data = nullptr;
    std::size_t size = 0;
  };
  void grow() {
    std::vector<slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const slot& e : old) {
      if (e.data == nullptr) continue;
      std::size_t at = e.hash & (slots_.size() - 1);
      while (slots_[at].data != nullptr) at = (at + 1) & (slots_.size() - 1);
      slots_[at] = e;
    }
  }
  std::vector<slot> slots_;
  std::size_t count_ = 0;
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
  ahead_run* ahead = nullptr;                    ///< statements parsed ahead, not yet taken over
  const std::atomic<bool>* cancelled = nullptr;  ///< a piece's parse: stop when set
  /// Names interned and values_kept() values copied into storage: the buffer is a mapped
  /// file whose pages the loader drops after the parse.
  bool detach = false;
  name_interner names{};
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
      fail(name_line, name_column,
           "more than " + std::to_string(max_directives) +
               " directives after expanding includes (max_directives)");
    }
    directive d;
    if (detach) {
      // Keys of map, geo, types... too: rules that walk every block read their names.
      d.name = names.intern(pending.front().value(), store);
      if (values_kept(d.name))
        for (std::size_t i = 1; i < pending.size(); ++i)
          pending[i] = argument_builder::detach(pending[i], store);
    } else {
      d.name = pending.front().value();
    }
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

/// grammar::statement_splice: at the start of the run parsed ahead, in the context and
/// depth it was parsed for, takes over its statements and moves the input past them.
template <typename Input>
bool splice_here(Input& in, parse_state& st) {
  ahead_run* run = st.ahead;
  if (run == nullptr || in.current() != run->at) return false;
  st.ahead = nullptr;  // one chance: a later visit to the same byte is a different parse
  // A piece that parsed with `depth` blocks open parses the same at any smaller depth
  // (depth only matters to max_depth), so a file's top level (an included file of servers)
  // takes pieces as well as an http block does.
  if (st.stack.back().context != block_context::directives || st.depth > run->depth ||
      !st.pending.empty()) {
    run->cancel = true;
    return false;
  }
  run->join();
  std::size_t n = 0;
  for (const auto& p : run->pieces) {
    if (!p->ok) return false;  // the serial parse reads the text itself (and reports its error)
    n += p->directives;
  }
  if (n > st.max_directives - st.directives) throw retry_serially{};
  st.directives += n;
  for (auto& p : run->pieces) {
    st.open.insert(st.open.end(), p->top.begin(), p->top.end());
    st.store.absorb(std::move(p->store));
  }
  in.bump(static_cast<std::size_t>(run->resume - in.current()));
  splices.fetch_add(1, std::memory_order_relaxed);
  return true;
}

template <typename Rule>
inline constexpr bool is_nesting =
    std::is_same_v<Rule, g::block> || std::is_same_v<Rule, g::lua_block> ||
    std::is_same_v<Rule, g::lua_braces>;

template <typename Rule>
struct control : pegtl::normal<Rule> {
  template <typename ParseInput>
  static void start(const ParseInput& in, parse_state& st) {
    if constexpr (std::is_same_v<Rule, g::statement>) {
      if (st.cancelled != nullptr && st.cancelled->load(std::memory_order_relaxed))
        throw piece_cancelled{};
      if (st.ahead != nullptr && in.current() > st.ahead->at) {
        st.ahead->cancel = true;  // went past the cut without a statement starting there
        st.ahead = nullptr;
      }
    }
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

/// Offset of the `s` of a line `[ \t]*server[ \t]*{` that starts at or after `from`
/// (npos: none). Only a guess at a statement start: splice_here and the pieces' own parses
/// decide whether it is one.
std::size_t server_line_from(std::string_view text, std::size_t from) {
  constexpr std::string_view word = "server";
  for (std::size_t p = text.find(word, from); p != std::string_view::npos;
       p = text.find(word, p + 1)) {
    std::size_t b = p;
    while (b > 0 && (text[b - 1] == ' ' || text[b - 1] == '\t')) --b;
    if (b == 0 || text[b - 1] != '\n') continue;
    std::size_t e = p + word.size();
    while (e < text.size() && (text[e] == ' ' || text[e] == '\t')) ++e;
    if (e < text.size() && text[e] == '{') return p;
  }
  return std::string_view::npos;
}

/// The last such line before `to`, or npos.
std::size_t server_line_before(std::string_view text, std::size_t to) {
  // Back from the end a line at a time: big files end with their server blocks.
  std::size_t p = to;
  while (p > 0) {
    const std::size_t line = text.rfind('\n', p - 1);
    if (line == std::string_view::npos) return std::string_view::npos;
    const std::size_t s = server_line_from(text.substr(0, p), line);
    if (s != std::string_view::npos && s < to) return s;
    p = line;
  }
  return std::string_view::npos;
}

/// Parses one piece of `content` (offsets, lines and columns stay those of the whole buffer).
void parse_piece(std::string_view content, const std::string& path, std::uint32_t file_index,
                 std::size_t max_depth, std::size_t max_args, std::size_t max_directives,
                 std::size_t depth, bool detach, std::atomic<bool>& cancel,
                 ahead_run::piece& piece) {
  try {
    parse_state st{content, path,        file_index, max_depth, max_args, max_directives,
                   0,       piece.store, {},         {},        {}};
    st.depth = depth;
    st.detach = detach;
    st.cancelled = &cancel;
    st.stack.push_back({0, block_context::directives});
    pegtl::memory_input<pegtl::tracking_mode::lazy, pegtl::eol::lf_crlf> in(piece.begin, piece.end,
                                                                            path);
    pegtl::parse<g::config_file, action, control>(in, st);
    piece.top = std::move(st.open);
    piece.directives = st.directives;
    piece.ok = true;
  } catch (...) {
    // Not an error of the file yet: the serial parse reads this text if it gets there.
    // The other pieces are of no use now.
    cancel = true;
  }
}

/// Splits a large buffer into pieces for other threads, or returns nullptr (small buffer,
/// one core, no `server {` lines, threads unavailable).
std::unique_ptr<ahead_run> plan_ahead(std::string_view content, const std::string& path,
                                      std::uint32_t file_index, block_context context,
                                      std::size_t max_depth, std::size_t max_args,
                                      std::size_t max_directives, std::size_t start_depth,
                                      std::size_t min_bytes, bool detach) {
  if (content.size() < min_bytes || context != block_context::directives) return nullptr;
  const unsigned threads = std::min(std::thread::hardware_concurrency(), 4u);
  if (threads < 2) return nullptr;
  // The serial parse reads up to the first cut and after the last one; each other thread
  // one piece in between.
  const std::size_t last = server_line_before(content, content.size());
  if (last == std::string_view::npos) return nullptr;
  std::vector<std::size_t> cuts;
  for (unsigned i = 1; i < threads; ++i) {
    const std::size_t c = server_line_from(content, last / threads * i);
    if (c >= last) break;
    if (cuts.empty() || c > cuts.back()) cuts.push_back(c);
  }
  if (cuts.empty()) return nullptr;
  cuts.push_back(last);
  auto run = std::make_unique<ahead_run>();
  run->at = content.data() + cuts.front();
  run->resume = content.data() + last;
  run->depth = start_depth + 1;  // statements of a top-level block (http, stream) or shallower
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    auto p = std::make_unique<ahead_run::piece>();
    p->begin = content.data() + cuts[i];
    p->end = content.data() + cuts[i + 1];
    run->pieces.push_back(std::move(p));
  }
  try {
    for (auto& p : run->pieces) {
      ahead_run::piece& piece = *p;
      const std::size_t depth = run->depth;
      std::atomic<bool>& cancel = run->cancel;
      run->threads.emplace_back([=, &path, &piece, &cancel] {
        parse_piece(content, path, file_index, max_depth, max_args, max_directives, depth, detach,
                    cancel, piece);
      });
    }
  } catch (const std::system_error&) {
    return nullptr;  // no threads to be had: the serial parse does it all (run joins what started)
  }
  return run;
}

}  // namespace

namespace detail {

std::size_t parallel_splices() {
  return splices.load(std::memory_order_relaxed);
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
                                 std::size_t start_depth, std::size_t parallel_min_bytes,
                                 bool detach) {
  parse_state st{content, path,  file_index, max_depth, max_args, max_directives,
                 0,       store, {},         {},        {}};
  st.depth = start_depth;
  st.detach = detach;
  st.stack.push_back({0, context});
  std::unique_ptr<ahead_run> run =
      plan_ahead(content, path, file_index, context, max_depth, max_args, max_directives,
                 start_depth, parallel_min_bytes, detach);
  st.ahead = run.get();
  pegtl::memory_input<pegtl::tracking_mode::lazy, pegtl::eol::lf_crlf> in(content.data(),
                                                                          content.size(), path);
  try {
    pegtl::parse<g::config_file, action, control>(in, st);
  } catch (const retry_serially&) {
    run.reset();
    return parse_in_context(content, path, file_index, context, max_depth, max_args, max_directives,
                            store, start_depth, std::string_view::npos, detach);
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
  out.content = out.store->adopt(std::string(content));
  const load_options defaults;
  out.directives = detail::parse_in_context(
      out.content, path, file_index, block_context::directives, defaults.max_depth,
      defaults.max_args_per_directive, defaults.max_directives, *out.store, 0,
      defaults.parallel_parse_min_bytes);
  return out;
}

}  // namespace ngxtls::config
