#pragma once
// The syntax tree: what src/config produces from nginx configuration text and what
// src/model reads. Input is bytes, never decoded.
//
// The tree is compact for large fleets (a 20 MB config): names and arguments
// are views into the file's bytes, unescaped copies exist only for the few tokens whose
// escapes change them, and every record lives in one append-only `storage` owned by the
// config, so records are trivially copyable and never freed one by one. Records refer to
// each other by 32-bit offsets into the one address range all storages share.

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
/// Every tree record, argument value and file's bytes of every config lives in one
/// reserved address range (4 GiB, committed as used), so records refer to each other by
/// 32-bit offsets from its base: a list and an argument are 8 bytes, a directive 44
/// (a 20 MB config has 360,000 directives and 800,000 arguments).
/// Null until the first storage takes memory; never changes after.
inline std::byte* region_base = nullptr;
/// Size of the range, bytes.
inline constexpr std::size_t region_bytes = std::size_t{1} << 32;
/// Offset of `p` from region_base; 0 for null. Throws std::logic_error when `p` is not in
/// the range (a record or value made from memory no storage owns).
std::uint32_t region_offset(const void* p);
/// Address of offset `off` (0 is never handed out, so it stands for "none").
inline const char* region_at(std::uint32_t off) {
  return reinterpret_cast<const char*>(region_base) + off;
}
}  // namespace detail

/// A read-only run of `n` records (arguments of a directive, children of a block).
/// Cheap to copy (8 bytes); points into a `storage`.
template <typename T>
class list {
 public:
  list() = default;
  /// `first` must point into a storage (or be null with `count` 0); throws std::logic_error
  /// otherwise.
  list(const T* first, std::uint32_t count) : off_(detail::region_offset(first)), n_(count) {}
  const T* begin() const { return reinterpret_cast<const T*>(detail::region_at(off_)); }
  const T* end() const { return begin() + n_; }
  const T* data() const { return begin(); }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const T& operator[](std::size_t i) const { return begin()[i]; }
  const T& front() const { return begin()[0]; }
  const T& back() const { return begin()[n_ - 1]; }

 private:
  std::uint32_t off_ = 0;
  std::uint32_t n_ = 0;
};

/// One argument of a directive (8 bytes). `value()` is what nginx sees after its
/// unescaping (ngx_conf_read_token: quotes removed, \" \' \\ reduced, \t \r \n expanded);
/// `raw()` is the bytes as written, quotes and backslashes included.
class argument {
 public:
  argument() = default;
  /// Longest value an argument holds (its size field has 29 bits): above max_file_bytes.
  static constexpr std::size_t max_bytes = (std::size_t{1} << 29) - 1;
  /// An argument whose value is `bytes` as written unquoted (built-in defaults, Lua bodies).
  /// `bytes` must live in a storage. Throws std::length_error when `bytes` is longer than
  /// max_bytes, std::logic_error when it is not in a storage.
  static argument literal(std::string_view bytes) {
    if (bytes.size() > max_bytes) throw std::length_error("argument longer than 512 MiB");
    argument a;
    a.off_ = detail::region_offset(bytes.data());
    a.size_ = static_cast<std::uint32_t>(bytes.size());
    return a;
  }
  /// The unescaped value; a view into the file's bytes or the config's storage.
  std::string_view value() const { return {detail::region_at(off_), std::size_t{size_}}; }
  /// The bytes as written (a view into the file's bytes; for a built-in default, the value).
  std::string_view raw() const;
  quote_style quote() const { return static_cast<quote_style>(quote_); }

 private:
  friend struct argument_builder;
  std::uint32_t off_ = 0;
  std::uint32_t size_ : 29 = 0;  ///< values are at most a file (max_file_bytes: 256 MiB)
  std::uint32_t quote_ : 2 = 0;
  std::uint32_t unescaped_ : 1 = 0;  ///< value lives in storage, after a raw_header
};

/// A directive's name (8 bytes): a view into a storage, used like a std::string_view.
class name_ref {
 public:
  name_ref() = default;
  /// `s` must live in a storage (the file's bytes or an unescaped copy); throws
  /// std::logic_error otherwise, std::length_error when longer than argument::max_bytes.
  name_ref(std::string_view s) : off_(detail::region_offset(s.data())) {  // NOLINT: implicit
    if (s.size() > argument::max_bytes) throw std::length_error("name longer than 512 MiB");
    size_ = static_cast<std::uint32_t>(s.size());
  }
  std::string_view view() const { return {detail::region_at(off_), size_}; }
  operator std::string_view() const { return view(); }  // NOLINT: used as a string_view
  const char* data() const { return detail::region_at(off_); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const char* begin() const { return data(); }
  const char* end() const { return data() + size_; }
  char front() const { return data()[0]; }
  char back() const { return data()[size_ - 1]; }
  char operator[](std::size_t i) const { return data()[i]; }
  std::string_view substr(std::size_t pos, std::size_t n = std::string_view::npos) const {
    return view().substr(pos, n);
  }
  bool starts_with(std::string_view p) const { return view().starts_with(p); }
  bool ends_with(std::string_view p) const { return view().ends_with(p); }
  std::size_t find(std::string_view p, std::size_t pos = 0) const { return view().find(p, pos); }
  std::size_t find(char c, std::size_t pos = 0) const { return view().find(c, pos); }
  std::size_t rfind(char c, std::size_t pos = std::string_view::npos) const {
    return view().rfind(c, pos);
  }
  std::size_t rfind(std::string_view p, std::size_t pos = std::string_view::npos) const {
    return view().rfind(p, pos);
  }
  friend bool operator==(name_ref a, name_ref b) { return a.view() == b.view(); }
  friend bool operator==(name_ref a, std::string_view b) { return a.view() == b; }
  friend bool operator==(name_ref a, const char* b) { return a.view() == b; }
  friend bool operator==(name_ref a, const std::string& b) { return a.view() == b; }
  friend auto operator<=>(name_ref a, name_ref b) { return a.view() <=> b.view(); }
  friend auto operator<=>(name_ref a, std::string_view b) { return a.view() <=> b; }

 private:
  std::uint32_t off_ = 0;
  std::uint32_t size_ = 0;
};

/// Kept in storage just before an unescaped value: where its raw bytes are.
struct raw_header {
  std::uint32_t raw;  ///< region offset (detail::region_at)
  std::uint32_t size;
};

/// One directive: a name, its arguments and an optional block (44 bytes; checked below).
/// In the expanded tree (`config::root`) `include` directives are replaced by the
/// directives of the files they name, each stamped with the include chain that brought it in.
struct directive {
  name_ref
      name;  ///< unescaped, as written (a UTF-8 BOM before the first directive stays part of it)
  list<argument>
      args;  ///< for a `*_by_lua_block` directive, one more record past the end holds the body
  list<directive> block;     ///< children, when has_block
  std::uint32_t file = 0;    ///< index into config::files
  std::uint32_t line = 0;    ///< 1-based line of the name
  std::uint32_t offset = 0;  ///< byte offset of the name's first byte in the file
  std::uint32_t chain = 0;   ///< index into config::chains; 0 = reached without any include
  /// 1-based byte column of the name (kept: a minified one-line file makes it costly to
  /// work out); 29 bits hold any column of a max_file_bytes file.
  std::uint32_t column : 29 = 0;
  bool has_block : 1 = false;      ///< true for `name args { ... }`, even when the block is empty
  bool lua : 1 = false;            ///< a `*_by_lua_block` directive (see lua_body())
  bool include_below : 1 = false;  ///< the block holds an `include` at some depth (loader: what
                                   ///< to copy)

  /// `*_by_lua_block` bodies are not nginx syntax: the body between the braces is kept
  /// verbatim, `block` stays empty and `has_block` is false.
  /// Returns the body, or nullopt for other directives.
  std::optional<std::string_view> lua_body() const {
    if (!lua) return std::nullopt;
    return args.data()[args.size()].value();
  }
};

static_assert(std::is_trivially_copyable_v<argument> && std::is_trivially_copyable_v<directive>,
              "tree records live in storage and are never destroyed one by one");
static_assert(sizeof(argument) == 8 && sizeof(directive) == 44,
              "tree records are sized for 20 MB configs: keep them small");

/// Append-only memory for tree records, unescaped values and file contents, taken from the
/// region (detail::region_base) in blocks. Nothing in it moves or is freed before the
/// storage itself. Not thread-safe while being filled.
class storage {
 public:
  storage() = default;
  storage(const storage&) = delete;
  storage& operator=(const storage&) = delete;
  /// Gives its blocks back to the region.
  ~storage();
  /// A copy of `text`'s bytes kept for the storage's lifetime (stable address; an empty
  /// text gets a real address too). Throws std::length_error when the region is full (more
  /// than 4 GiB held).
  std::string_view adopt(std::string_view text);
  /// Room for `n` objects of trivially destructible `T`, uninitialised. Throws
  /// std::length_error when the region is full.
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
  /// Bytes handed out (records, values, file contents, alignment padding), for benchmarks.
  std::size_t bytes_used() const { return used_; }

 private:
  struct block {
    std::byte* at;
    std::size_t bytes;
  };
  void* allocate_bytes(std::size_t n, std::size_t align);
  std::byte* take_block(std::size_t bytes);
  std::vector<block> blocks_;
  std::byte* next_ = nullptr;
  std::size_t left_ = 0;
  std::size_t used_ = 0;
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

/// One link of an include chain: the include site and the chain that reached it. Chains
/// share their prefixes, so an expansion costs one link, not a copy of its whole chain
/// (an include bomb 22 files deep copied 2.2 GB of chains).
struct include_link {
  std::uint32_t parent = 0;  ///< index into config::chains of the chain up to the site
  include_frame site;        ///< the `include` directive that extends it
};

/// What starts a suppression comment (`# ngxtls: ignore RULE`, docs/user-guide.md).
inline constexpr std::string_view suppression_marker = "ngxtls: ignore";

/// One source file as read.
struct source_file {
  file_path path;  ///< absolute or as given on the command line; "-" never appears (stdin dumps
                   ///< use the dump's paths); shared by every source_location of the file
  std::string_view content;  ///< the bytes read (kept in the config's storage)
  list<directive> parsed;    ///< this file's own tree: include directives kept
  /// The file holds suppression_marker: one scan at load time spares the suppression pass a
  /// scan of every file that has none (the usual case).
  bool suppressions = false;
  /// st_dev and st_ino of the file as it was read; 0 when it was not read from disk here (a
  /// dump, stdin, a memory source). `-o` is refused over a file read (cli), without a stat()
  /// per file of a fleet.
  std::uint64_t device = 0, inode = 0;
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

/// A directory an `include` glob could not read (EACCES, ...): glob() skips it, as nginx's
/// does, so the files it holds were not loaded.
struct unread_directory {
  source_location include;  ///< the include directive
  std::string directory;    ///< as glob() named it
  std::string reason;       ///< strerror text, e.g. "Permission denied"
};

/// A relative `include` of a site file read without a known conf prefix whose file is not
/// there (`include fastcgi_params;` beside a project's contrib/nginx.conf): nginx resolves it
/// against the main nginx.conf's directory, which a lone site file does not name.
struct missing_include {
  source_location include;  ///< the include directive
  std::string path;         ///< where it was looked for
};

/// The block a configuration's top level was read inside of, when it is not a main
/// nginx.conf (config/site_files.hpp decides it from the file's shape).
enum class implied_context : std::uint8_t {
  none,            ///< read as a main file (nginx.conf)
  http,            ///< a site file: inside `http { }`, as nginx reads conf.d/ and sites-enabled/
  stream,          ///< a stream site file: inside `stream { }`
  mail,            ///< a mail site file: inside `mail { }`
  http_server,     ///< a server snippet: inside a `server { }` of an implied `http { }`
  http_location,   ///< a location snippet: inside `location / { }` of an implied server
  http_directory,  ///< a folder of site files: each inside one shared `http { }`
};

/// A whole configuration: the main file, every file it includes, and the expanded tree.
/// Copies share the (immutable) storage.
struct config {
  std::shared_ptr<storage> store = std::make_shared<storage>();
  std::string conf_prefix;         ///< directory include paths and ssl_* files resolve against
  std::vector<source_file> files;  ///< files[0] is the main file; each file read once
  /// Loaded from an `nginx -T` dump: the files' paths are the dumped host's, and their text
  /// is the dump's, not what may be at those paths here.
  bool from_dump = false;
  /// Include chains as links: chains[0] is the empty chain (its link is unused), chain i
  /// is chain chains[i].parent followed by chains[i].site.
  std::vector<include_link> chains;
  list<directive> root;  ///< expanded tree (includes inlined at every site)
  std::vector<unread_directory> unread_directories;  ///< include globs that skipped a directory
  /// Relative includes not found where a site file's conf prefix was guessed
  /// (load_options::relative_includes_may_be_missing); their directives were not read.
  std::vector<missing_include> missing_includes;
  /// The block the top level was read inside of (none: a main nginx.conf), and why, in words
  /// for the report ("" when none).
  implied_context implied = implied_context::none;
  std::string implied_reason;
  /// The blocks added around the top level (records in `store`, positioned at the first
  /// directive they hold, so that a finding anchored at one points into the operator's file).
  std::vector<const directive*> implied_blocks;
  /// A directory input: the files under it that were not read, each with why.
  std::vector<std::pair<std::string, std::string>> skipped_files;

  /// The location of a directive, as file:line:col.
  source_location where(const directive& d) const;
  /// The include sites of chain `chain` (config::chains index), outermost first.
  std::vector<include_frame> chain_frames(std::uint32_t chain) const;
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
