#pragma once
// The syntax tree: what src/config produces from nginx configuration text and what
// src/model reads. Input is bytes, never decoded (DESIGN, Syntax tree).
//
// The tree is compact for large fleets (issue 6: a 20 MB config): names and arguments
// are views into the file's bytes, unescaped copies exist only for the few tokens whose
// escapes change them, and every record lives in one append-only `storage` owned by the
// config, so records are trivially copyable and never freed one by one.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "base/error.hpp"

namespace ngxtls::config {

/// How an argument was written. nginx strips the quotes; crossplane output and --fix need them.
enum class quote_style : std::uint8_t { none, single_quote, double_quote };

namespace detail {
/// A pointer kept as two 32-bit halves: records holding one pack to 4-byte alignment
/// (a 12-byte list, a 12-byte argument) instead of padding to 16 (issue 6: a 20 MB config
/// has 300,000 directives and a million arguments).
struct split_pointer {
  std::uint32_t lo = 0, hi = 0;
  split_pointer() = default;
  explicit split_pointer(const void* p) {
    const auto v = reinterpret_cast<std::uintptr_t>(p);
    lo = static_cast<std::uint32_t>(v);
    hi = static_cast<std::uint32_t>(static_cast<std::uint64_t>(v) >> 32);
  }
  template <typename T>
  const T* get() const {
    return reinterpret_cast<const T*>(
        static_cast<std::uintptr_t>((static_cast<std::uint64_t>(hi) << 32) | lo));
  }
};
}  // namespace detail

/// A read-only run of `n` records (arguments of a directive, children of a block).
/// Cheap to copy (12 bytes); points into a `storage`.
template <typename T>
class list {
 public:
  list() = default;
  list(const T* first, std::uint32_t count) : p_(first), n_(count) {}
  const T* begin() const { return p_.get<T>(); }
  const T* end() const { return begin() + n_; }
  const T* data() const { return begin(); }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const T& operator[](std::size_t i) const { return begin()[i]; }
  const T& front() const { return begin()[0]; }
  const T& back() const { return begin()[n_ - 1]; }

 private:
  detail::split_pointer p_;
  std::uint32_t n_ = 0;
};

/// One argument of a directive (12 bytes). `value()` is what nginx sees after its
/// unescaping (ngx_conf_read_token: quotes removed, \" \' \\ reduced, \t \r \n expanded);
/// `raw()` is the bytes as written, quotes and backslashes included.
class argument {
 public:
  argument() = default;
  /// An argument whose value is `bytes` as written unquoted (built-in defaults, tests).
  /// Longest value an argument holds (its size field has 29 bits): above max_file_bytes.
  static constexpr std::size_t max_bytes = (std::size_t{1} << 29) - 1;
  /// Throws std::length_error when `bytes` is longer than max_bytes.
  static argument literal(std::string_view bytes) {
    if (bytes.size() > max_bytes) throw std::length_error("argument longer than 512 MiB");
    argument a;
    a.data_ = detail::split_pointer(bytes.data());
    a.size_ = static_cast<std::uint32_t>(bytes.size());
    return a;
  }
  /// The unescaped value; a view into the file's bytes or the config's storage.
  std::string_view value() const { return {data_.get<char>(), std::size_t{size_}}; }
  /// The bytes as written (a view into the file's bytes; for a built-in default, the value).
  std::string_view raw() const;
  quote_style quote() const { return static_cast<quote_style>(quote_); }

 private:
  friend struct argument_builder;
  detail::split_pointer data_;
  std::uint32_t size_ : 29 = 0;  ///< values are at most a file (max_file_bytes: 256 MiB)
  std::uint32_t quote_ : 2 = 0;
  std::uint32_t unescaped_ : 1 = 0;  ///< value lives in storage, after a raw_header
};

/// Kept in storage just before an unescaped value: where its raw bytes are.
struct raw_header {
  const char* raw;
  std::uint32_t size;
};

/// One directive: a name, its arguments and an optional block (64 bytes; checked below).
/// In the expanded tree (`config::root`) `include` directives are replaced by the
/// directives of the files they name, each stamped with the include chain that brought it in.
struct directive {
  std::string_view
      name;  ///< unescaped, as written (a UTF-8 BOM before the first directive stays part of it)
  list<argument>
      args;  ///< for a `*_by_lua_block` directive, one more record past the end holds the body
  list<directive> block;     ///< children, when has_block
  std::uint32_t file = 0;    ///< index into config::files
  std::uint32_t line = 0;    ///< 1-based line of the name
  std::uint32_t offset = 0;  ///< byte offset of the name's first byte in the file
  std::uint32_t chain = 0;   ///< index into config::chains; 0 = reached without any include
  std::uint32_t column = 0;  ///< 1-based byte column of the name (kept: a minified one-line file
                             ///< makes it costly to work out)
  bool has_block = false;    ///< true for `name args { ... }`, even when the block is empty
  bool lua = false;          ///< a `*_by_lua_block` directive (see lua_body())
  bool include_below =
      false;  ///< the block holds an `include` at some depth (loader: what to copy)

  /// `*_by_lua_block` bodies are not nginx syntax: the body between the braces is kept
  /// verbatim (DESIGN, Syntax tree), `block` stays empty and `has_block` is false.
  /// Returns the body, or nullopt for other directives.
  std::optional<std::string_view> lua_body() const {
    if (!lua) return std::nullopt;
    return args.data()[args.size()].value();
  }
};

static_assert(std::is_trivially_copyable_v<argument> && std::is_trivially_copyable_v<directive>,
              "tree records live in storage and are never destroyed one by one");
static_assert(sizeof(argument) == 12 && sizeof(directive) <= 64,
              "tree records are sized for 20 MB configs (issue 6): keep them small");

/// Append-only memory for tree records, unescaped values and file contents. Nothing in
/// it moves or is freed before the storage itself. Not thread-safe while being filled.
class storage {
 public:
  storage() = default;
  storage(const storage&) = delete;
  storage& operator=(const storage&) = delete;
  /// Keeps `text` for the storage's lifetime; returns a view of its bytes (stable address).
  std::string_view adopt(std::string text);
  /// Room for `n` objects of trivially destructible `T`, uninitialised.
  template <typename T>
  T* allocate(std::size_t n) {
    static_assert(std::is_trivially_destructible_v<T>);
    return static_cast<T*>(allocate_bytes(n * sizeof(T), alignof(T)));
  }
  /// A copy of `records` in storage, as a list.
  template <typename T>
  list<T> copy(const T* records, std::size_t n) {
    if (n == 0) return {};
    T* out = allocate<T>(n);
    std::uninitialized_copy(records, records + n, out);
    return {out, static_cast<std::uint32_t>(n)};
  }
  /// Takes over everything `other` holds (records stay where they are; `other` ends empty).
  /// Used to keep the trees parsed on other threads alive with the config's.
  void absorb(storage&& other);
  /// Bytes held, for benchmarks.
  std::size_t bytes_reserved() const { return reserved_; }

 private:
  void* allocate_bytes(std::size_t n, std::size_t align);
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  std::byte* next_ = nullptr;
  std::size_t left_ = 0;
  std::size_t reserved_ = 0;
  std::vector<std::unique_ptr<std::string>> texts_;
};

/// Builds arguments (the parser; nothing else makes them from file bytes).
struct argument_builder {
  /// An argument whose raw bytes are `raw` (a view into stable file bytes) and whose value
  /// is `value`: when `value` is not inside `raw`, it is copied into `store` after a raw_header.
  static argument make(std::string_view raw, std::string_view value, quote_style quote,
                       storage& store);
};

/// One include site on the way to a directive: the `include` directive's location.
struct include_frame {
  std::uint32_t file = 0;  ///< index into config::files of the file that holds the include
  std::uint32_t line = 0;
  std::uint32_t column = 0;
};

/// One source file as read.
struct source_file {
  std::string path;  ///< absolute or as given on the command line; "-" never appears (stdin dumps
                     ///< use the dump's paths)
  std::string_view content;  ///< the bytes read (kept in the config's storage)
  list<directive> parsed;    ///< this file's own tree: include directives kept
  /// For each `include` directive of `parsed`: the files it named (config::files indices).
  std::unordered_map<const directive*, std::vector<std::uint32_t>> includes;
};

/// 1-based line and byte column of byte `offset` in `content`, counted from `from_line`
/// at byte `from_offset` (a known earlier position; 1 and 0 to count from the start).
struct line_column {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
};
line_column locate(std::string_view content, std::size_t offset, std::uint32_t from_line = 1,
                   std::size_t from_offset = 0);

/// A whole configuration: the main file, every file it includes, and the expanded tree.
/// Copies share the (immutable) storage.
struct config {
  std::shared_ptr<storage> store = std::make_shared<storage>();
  std::string conf_prefix;         ///< directory include paths and ssl_* files resolve against
  std::vector<source_file> files;  ///< files[0] is the main file; each file read once
  std::vector<std::vector<include_frame>> chains;  ///< chains[0] is empty; outermost include first
  list<directive> root;  ///< expanded tree (includes inlined at every site)

  /// The location of a directive, as file:line:col.
  source_location where(const directive& d) const;
  /// The location of argument `a` of directive `d` (`a` must be one of d.args). Costs the
  /// directive's length: for every argument of a directive use argument_positions().
  source_location where(const directive& d, const argument& a) const;
  /// Line and column of each of d.args, in one pass over the directive's bytes.
  std::vector<line_column> argument_positions(const directive& d) const;
  /// The include chain of a directive as locations, outermost first.
  std::vector<source_location> chain_of(const directive& d) const;
};

/// parse_buffer()'s result: the directives of one buffer and the storage they live in.
struct parsed_buffer {
  std::shared_ptr<storage> store;
  std::string_view content;  ///< a copy of the parsed bytes, in `store`
  list<directive> directives;

  const directive* begin() const { return directives.begin(); }
  const directive* end() const { return directives.end(); }
  std::size_t size() const { return directives.size(); }
  bool empty() const { return directives.empty(); }
  const directive& operator[](std::size_t i) const { return directives[i]; }
  /// 1-based line and column of an argument of one of these directives.
  line_column position(const directive& d, const argument& a) const;
};

}  // namespace ngxtls::config
