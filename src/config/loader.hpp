#pragma once
// Reading nginx configuration: one file, a whole tree with includes, or an `nginx -T` dump.

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/tree.hpp"

namespace ngxtls::config {

/// Where included files come from: the real filesystem, or an in-memory
/// path -> content map (nginx -T dumps, the fuzzer).
class file_source {
 public:
  virtual ~file_source() = default;
  /// The file's bytes, kept in `store` (read straight into it, or already there) for as long
  /// as `store` lives. Throws input_error (at `from`) when it is missing, a directory, not a
  /// regular file, unreadable or over the size limit; message as nginx's
  /// `open() "PATH" failed (2: No such file or directory)` where nginx has one.
  virtual std::string_view read(const std::string& path, const source_location& from,
                                storage& store) = 0;
  /// What glob() found: at most `max_matches` paths, and how many matched in all.
  struct glob_result {
    std::vector<std::string> paths;  ///< sorted bytewise (nginx sorts glob results)
    std::size_t matches = 0;         ///< every match, also those past max_matches
    /// Directories the walk could not read, with the errno (glob() passes over them, as
    /// nginx's does: the include silently loads fewer files).
    std::vector<std::pair<std::string, int>> unreadable;
  };
  /// Paths matching a glob pattern as glibc's glob() matches them; none when none match.
  /// Bounded while it walks: it keeps at most `max_matches` paths and reads at most
  /// `max_entries` directory entries (else input_error naming max_glob_entries), so a glob
  /// over a huge or self-linked tree stops early.
  virtual glob_result glob(const std::string& pattern, std::size_t max_matches,
                           std::size_t max_entries) = 0;
  /// st_dev and st_ino of the file the last read() opened (source_file::device, inode);
  /// zeros when it opened none (text held in memory).
  virtual std::pair<std::uint64_t, std::uint64_t> last_read_identity() const { return {0, 0}; }
  /// Says the next reads will most likely be of `paths`, in that order (a glob's matches), so
  /// that a source may read them ahead; read() answers as it would have. False when the source
  /// does not (it has none to do, or is reading ahead already); then stop_read_ahead() is not
  /// called.
  virtual bool start_read_ahead(const std::vector<std::string>& paths) {
    (void)paths;
    return false;
  }
  /// Ends what a start_read_ahead() that returned true began.
  virtual void stop_read_ahead() {}
};

/// The real filesystem.
std::unique_ptr<file_source> make_disk_source();
/// An in-memory map of absolute path -> content; globs match against its keys.
std::unique_ptr<file_source> make_memory_source(std::map<std::string, std::string> files);

/// Text held in a storage, read once and never copied again: a config loaded from it keeps
/// `store` as its own storage, and its files' contents are views into `bytes`.
struct stored_text {
  std::shared_ptr<storage> store = std::make_shared<storage>();
  std::string_view bytes;  ///< in `store`
};

/// Options for loading a configuration.
struct load_options {
  /// nginx's conf prefix: relative include paths resolve against it. Default: the main file's
  /// directory.
  std::optional<std::string> conf_prefix;
  /// Do not follow includes (crossplane's --single-file).
  bool single_file = false;
  /// The block site files are read inside of (`--context http|stream|mail`), instead of the one
  /// their include site or their shape implies (config/site_files.hpp). With http, a server or
  /// location snippet is still read inside its implied server. Ignored for a main nginx.conf
  /// and an `nginx -T` dump.
  std::optional<implied_context> site_context;
  /// The conf prefix is a guess (a site file or folder read without --conf-prefix): a relative
  /// literal `include` whose file does not exist is recorded in config::missing_includes
  /// instead of being an input error.
  bool relative_includes_may_be_missing = false;
  /// Limits (docs/limits.md): each hit is an input_error that names the limit.
  std::size_t max_file_bytes = 256u << 20;
  std::size_t max_depth = 256;  ///< block nesting, in one file and across includes
  std::size_t max_include_depth = 64;
  std::size_t max_included_files = 100000;
  /// Directives in the expanded tree: a file included twice by a file included twice ...
  /// grows exponentially, so the expansion is bounded too; each file an include expands
  /// counts as one, so that files holding only includes are bounded as well.
  std::size_t max_directives = 10000000;
  /// Files expanded by `include`, every site counted (a file included by 8,000 servers
  /// counts 8,000 times): bounds an include bomb's work and chain memory long before its
  /// directives reach max_directives.
  std::size_t max_include_expansions = 1000000;
  /// Arguments of one directive (nginx has no such limit in its tokenizer; `server_name`
  /// and `map` lines take any number): bounds memory per directive.
  std::size_t max_args_per_directive = 100000;
  /// Paths one `include` glob may expand to (glibc's glob() has no limit of its own).
  std::size_t max_glob_matches = 65536;
  /// Directory entries one `include` glob may read while it looks for matches: a glob over
  /// a deep or self-linked tree (`d/*/*/*/*/*/*`) stops here, long before it lists millions.
  std::size_t max_glob_entries = 1000000;
};

/// Parses one buffer (copied into the result's storage) into a per-file tree. `file_index`
/// is stamped on every directive. `path` is used in error locations. Throws input_error
/// with nginx's message (`unexpected "}"`, `unexpected end of file, expecting ";" or "}"`,
/// `unexpected "X"`, `directive "X" has no opening "{"`, ...) at file:line:col.
parsed_buffer parse_buffer(std::string_view content, const std::string& path,
                           std::uint32_t file_index);

/// Loads `main_path` and everything it includes from `source`.
/// Throws input_error: syntax errors, missing literal includes, include cycles (message names
/// the chain of active includes), limits.
config load(const std::string& main_path, file_source& source, const load_options& options = {});

/// Loads each of `paths` as a top-level file of one configuration (a folder of site files,
/// config/site_files.hpp): a file is read once however many name or include it. `roots[i]`
/// receives the expanded tree of paths[i] and `indices[i]` its config::files index; the
/// config's root is left empty for the caller to build. Throws input_error as load().
config load_each(const std::vector<std::string>& paths, file_source& source,
                 const load_options& options, std::vector<list<directive>>& roots,
                 std::vector<std::uint32_t>& indices);

/// Loads configuration text that is not a file (a plain config on stdin): `name` labels it
/// in errors and in config::files[0].path; includes are read from `source`, relative to
/// options.conf_prefix, else the current directory. The config takes over `content`'s
/// storage. Throws input_error as load().
config load_buffer(stored_text content, const std::string& name, file_source& source,
                   const load_options& options = {});
/// load_buffer() on a copy of `content`.
config load_buffer(std::string_view content, const std::string& name, file_source& source,
                   const load_options& options = {});

/// Reads file descriptor `fd` (standard input) to its end into one buffer, in chunks, but
/// never more than `max_bytes`: past that it stops reading and throws input_error at `name`
/// naming the limit (max_file_bytes), so that a huge or endless stream does not fill memory
/// first. A regular file is read straight into the result; a pipe's chunks are copied into
/// it once at the end, and given back.
stored_text read_stream_bounded(int fd, const std::string& name, std::size_t max_bytes);

/// Loads a file from disk (load() with the disk source). A file that looks_like_dump() is
/// loaded with load_dump() (a saved `nginx -T` output).
config load_file(const std::string& main_path, const load_options& options = {});

/// Loads an `nginx -T` dump: split at `# configuration file PATH:` markers, main file first;
/// includes are expanded from the dumped files (docs/nginx-facts.md#parsing). The config takes over
/// `dump`'s storage and its files are views into the dump's bytes (no copy per file). `dump_name`
/// names the dump in errors that precede the first marker. Throws input_error when no marker is
/// found.
config load_dump(stored_text dump, const std::string& dump_name, const load_options& options = {});
/// load_dump() on a copy of `dump`.
config load_dump(std::string_view dump, const std::string& dump_name,
                 const load_options& options = {});

/// True when `text` looks like an `nginx -T` dump (its first non-empty line, or the line after
/// nginx's "syntax is ok" lines, is a `# configuration file PATH:` marker).
bool looks_like_dump(std::string_view text);

}  // namespace ngxtls::config
