// Loading a whole configuration: files, includes (expanded at every site), `nginx -T` dumps.

#include "config/loader.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <system_error>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "config/parse_internal.hpp"
#include "config/paths.hpp"
#include "config/read_ahead.hpp"

namespace ngxtls::config {

namespace {

/// nginx's wording for a failed system call: `open() "PATH" failed (2: No such file or directory)`.
std::string syscall_failed(const char* call, const std::string& path, int err) {
  return std::string(call) + " \"" + path + "\" failed (" + std::to_string(err) + ": " +
         std::strerror(err) + ")";
}

bool has_glob_chars(const std::string& s) {
  return s.find_first_of("*?[") != std::string::npos;
}

std::string normalize(const std::string& path) {
  if (path.empty()) return path;
  return std::filesystem::path(path).lexically_normal().string();
}

/// The directory of `path` as nginx's conf prefix ("" when the path has no directory:
/// relative includes then resolve against the current directory).
std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {};
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

/// glibc's glob(pattern, 0) as nginx calls it (fnmatch with FNM_PERIOD per component,
/// literal components checked with lstat(), symlinks followed), done over opendir/readdir so
/// that it can stop: glob() lists every match before the caller can count them (12
/// self-linked directories under `d/*/*/*/*/*/*/*`: minutes and gigabytes).
struct glob_walk {
  const std::string& pattern;
  std::size_t max_matches;
  std::size_t max_entries;
  /// Matches the walk saw as regular files (lstat, or the directory entry's type): read()
  /// then needs no stat() of its own before it opens them.
  std::unordered_set<std::string>& regular;
  file_source::glob_result out{};
  std::vector<std::string> parts{};
  std::size_t entries = 0;

  void run() {
    std::size_t pos = 0;
    while (pos <= pattern.size()) {
      const std::size_t slash = std::min(pattern.find('/', pos), pattern.size());
      if (slash > pos) parts.push_back(pattern.substr(pos, slash - pos));
      pos = slash + 1;
    }
    step(!pattern.empty() && pattern[0] == '/' ? "/" : "", 0);
  }

  static std::string join(const std::string& dir, const std::string& name) {
    if (dir.empty()) return name;
    if (dir.back() == '/') return dir + name;
    return dir + "/" + name;
  }

  static std::string unescape(const std::string& part) {
    std::string out;
    for (std::size_t i = 0; i < part.size(); ++i) {
      if (part[i] == '\\' && i + 1 < part.size()) ++i;
      out += part[i];
    }
    return out;
  }

  void found(std::string path, bool is_regular) {
    ++out.matches;
    if (out.paths.size() >= max_matches) return;
    if (is_regular) regular.insert(path);
    out.paths.push_back(std::move(path));
  }

  void step(const std::string& dir, std::size_t i, bool is_regular = false) {
    if (i == parts.size()) {
      found(dir, is_regular);
      return;
    }
    const std::string& part = parts[i];
    if (!has_glob_chars(part)) {
      const std::string path = join(dir, unescape(part));
      struct stat sb {};
      if (::lstat(path.c_str(), &sb) == 0) step(path, i + 1, S_ISREG(sb.st_mode));
      return;
    }
    DIR* d = ::opendir(dir.empty() ? "." : dir.c_str());
    if (d == nullptr) {
      // glob() passes over it too; an unreadable one is noted (a missing one is no match).
      if (errno != ENOENT && errno != ENOTDIR)
        out.unreadable.emplace_back(dir.empty() ? "." : dir, errno);
      return;
    }
    std::vector<std::pair<std::string, bool>> names;  // with "a regular file"
    try {
      while (const dirent* e = ::readdir(d)) {
        if (++entries > max_entries) {
          throw input_error({pattern, 0, 0},
                            "include \"" + pattern + "\" reads more than " +
                                std::to_string(max_entries) +
                                " directory entries looking for matches (max_glob_entries)");
        }
        if (::fnmatch(part.c_str(), e->d_name, FNM_PERIOD) == 0)
          names.emplace_back(e->d_name, e->d_type == DT_REG);
      }
    } catch (...) {
      ::closedir(d);
      throw;
    }
    ::closedir(d);
    for (const auto& [name, is_regular] : names) step(join(dir, name), i + 1, is_regular);
  }
};

class disk_source final : public file_source {
 public:
  explicit disk_source(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  std::string_view read(const std::string& path, const source_location& from,
                        storage& store) override {
    if (ahead_) {
      if (auto got = ahead_->take(path)) {
        regular_.erase(path);
        const std::size_t size = got->bytes.size();
        char* out = store.allocate<char>(std::max<std::size_t>(size, 1));
        std::memcpy(out, got->bytes.data(), size);
        last_identity_ = {got->device, got->inode};
        return {out, size};
      }
    }
    // A glob match just seen as a regular file is opened at once (fstat() below checks it
    // again): one stat() less per file of a fleet of site files.
    if (regular_.erase(path) == 0) {
      struct stat sb {};
      if (::stat(path.c_str(), &sb) != 0)
        throw input_error(from, syscall_failed("open()", path, errno));
      if (S_ISDIR(sb.st_mode)) throw input_error(from, syscall_failed("pread()", path, EISDIR));
      // nginx reads st_size bytes: a device such as /dev/null reads as empty. A FIFO or
      // socket would block nginx (and us): refuse it.
      if (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode)) return store.adopt({});
      if (!S_ISREG(sb.st_mode)) throw input_error(from, "\"" + path + "\" is not a regular file");
      if (static_cast<std::size_t>(sb.st_size) > max_bytes_) throw too_big(path, from);
    }
    // O_NONBLOCK: the file may have been replaced by a FIFO since it was seen.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw input_error(from, syscall_failed("open()", path, errno));
    std::size_t got = 0;
    char* out = nullptr;
    last_identity_ = {0, 0};
    try {
      struct stat fb {};
      if (::fstat(fd, &fb) != 0 || !S_ISREG(fb.st_mode)) {
        throw input_error(from, "\"" + path + "\" is not a regular file");
      }
      last_identity_ = {static_cast<std::uint64_t>(fb.st_dev),
                        static_cast<std::uint64_t>(fb.st_ino)};
      const auto size = static_cast<std::size_t>(fb.st_size);
      if (size > max_bytes_) throw too_big(path, from);
      // nginx reads st_size bytes and no more: a procfs or sysfs file (size 0, such as
      // /proc/self/environ) reads as empty there, so it must here too, or an include of
      // one would parse (and print) the process's environment. A file that grows while
      // it is read is read up to the size fstat() gave, as nginx reads it. The bytes go
      // straight into the config's storage: no second copy.
      out = store.allocate<char>(std::max<std::size_t>(size, 1));
      while (got < size) {
        const ssize_t n = ::read(fd, out + got, size - got);
        if (n < 0) {
          if (errno == EINTR) continue;
          throw input_error(from, syscall_failed("pread()", path, errno));
        }
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
      }
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return {out, got};
  }

  std::pair<std::uint64_t, std::uint64_t> last_read_identity() const override {
    return last_identity_;
  }

  bool start_read_ahead(const std::vector<std::string>& paths) override {
    // A few files are not worth a thread; a nested glob is read as it comes. Only what the
    // walk saw as regular files is opened ahead: opening a device can act on it.
    if (ahead_ || paths.size() < 8) return false;
    std::vector<std::string> regular;
    for (const auto& p : paths)
      if (regular_.count(p)) regular.push_back(p);
    if (regular.size() < 8) return false;
    try {
      ahead_ = std::make_unique<read_ahead>(std::move(regular), max_bytes_);
    } catch (const std::system_error&) {
      return false;  // no thread to be had: read them one at a time
    }
    return true;
  }
  void stop_read_ahead() override { ahead_.reset(); }

  glob_result glob(const std::string& pattern, std::size_t max_matches,
                   std::size_t max_entries) override {
    glob_walk walk{pattern, max_matches, max_entries, regular_};
    walk.run();
    std::sort(walk.out.paths.begin(), walk.out.paths.end());
    return std::move(walk.out);
  }

 private:
  input_error too_big(const std::string& path, const source_location& from) const {
    return input_error(from, "\"" + path + "\" is larger than the limit of " +
                                 std::to_string(max_bytes_) + " bytes (max_file_bytes)");
  }
  std::size_t max_bytes_;
  std::unordered_set<std::string> regular_;                      ///< see glob_walk::regular
  std::pair<std::uint64_t, std::uint64_t> last_identity_{0, 0};  ///< last_read_identity()
  std::unique_ptr<read_ahead> ahead_;  ///< the glob being read ahead, if any
};

/// Files held in memory: copies it owns (copied into the loader's storage when read), or
/// views into bytes that already live in the loader's storage (a dump's files).
class memory_source final : public file_source {
 public:
  explicit memory_source(std::map<std::string, std::string> files) : owned_(std::move(files)) {
    for (const auto& [k, v] : owned_) files_[normalize(k)] = v;
  }
  /// `files` must live in the storage the loader reads them into.
  explicit memory_source(const std::map<std::string, std::string_view>& files) : in_store_(true) {
    for (const auto& [k, v] : files) files_[normalize(k)] = v;
  }
  std::string_view read(const std::string& path, const source_location& from,
                        storage& store) override {
    auto it = files_.find(normalize(path));
    if (it == files_.end() && in_store_) {
      // nginx -T prints every file it opened, so a file missing from a dump was cut from it:
      // the file on this machine, if any, is not the one the dump's nginx read.
      throw input_error(from, "\"" + path +
                                  "\" is not in the nginx -T dump (nginx -T prints every file "
                                  "it reads: the dump was cut or edited)");
    }
    if (it == files_.end()) throw input_error(from, syscall_failed("open()", path, ENOENT));
    return in_store_ ? it->second : store.adopt(it->second);
  }
  glob_result glob(const std::string& pattern, std::size_t max_matches, std::size_t) override {
    glob_result out;
    const std::string p = normalize(pattern);
    // Only keys under the pattern's literal start can match: a dump of 8,000 sites that
    // each include a glob of their own must not test every file against every glob.
    const std::string start = p.substr(0, p.find_first_of("*?[\\"));
    for (auto it = files_.lower_bound(start);
         it != files_.end() && it->first.compare(0, start.size(), start) == 0; ++it) {
      if (::fnmatch(p.c_str(), it->first.c_str(), FNM_PATHNAME | FNM_PERIOD) == 0) {
        ++out.matches;
        if (out.paths.size() < max_matches) out.paths.push_back(it->first);
      }
    }
    return out;  // std::map keys are already sorted bytewise
  }

 private:
  std::map<std::string, std::string> owned_;
  std::map<std::string, std::string_view> files_;
  bool in_store_ = false;
};

/// Serves one buffer, already in the loader's storage, under `name` and everything else from
/// another source.
class overlay_source final : public file_source {
 public:
  overlay_source(std::string name, std::string_view content, file_source& base)
      : name_(std::move(name)), content_(content), base_(base) {}
  std::string_view read(const std::string& path, const source_location& from,
                        storage& store) override {
    overlaid_ = path == name_;
    if (overlaid_) return content_;
    return base_.read(path, from, store);
  }
  std::pair<std::uint64_t, std::uint64_t> last_read_identity() const override {
    return overlaid_ ? std::pair<std::uint64_t, std::uint64_t>{0, 0} : base_.last_read_identity();
  }
  bool start_read_ahead(const std::vector<std::string>& paths) override {
    return base_.start_read_ahead(paths);
  }
  void stop_read_ahead() override { base_.stop_read_ahead(); }
  glob_result glob(const std::string& pattern, std::size_t max_matches,
                   std::size_t max_entries) override {
    return base_.glob(pattern, max_matches, max_entries);
  }

 private:
  std::string name_;
  std::string_view content_;
  file_source& base_;
  bool overlaid_ = false;  ///< the last read() was of name_
};

/// Builds a config: reads each file once, expands includes at every site.
class loader {
 public:
  /// The config keeps `store`, which may already hold text the sources serve.
  loader(file_source& source, const load_options& options,
         std::shared_ptr<storage> store = std::make_shared<storage>())
      : source_(source), options_(options) {
    cfg_.store = std::move(store);
  }

  config run(const std::string& main_path) {
    cfg_.conf_prefix = options_.conf_prefix ? *options_.conf_prefix : directory_of(main_path);
    if (cfg_.conf_prefix.empty() && !options_.conf_prefix) cfg_.conf_prefix = ".";
    cfg_.chains.emplace_back();
    try {
      const std::uint32_t main =
          file_index(main_path, {main_path, 0, 0}, block_context::directives);
      active_.push_back(main);
      cfg_.root = expand(cfg_.files[main].parsed, 0, block_context::directives);
      active_.pop_back();
      mark(main, expanded);
    } catch (const std::length_error& e) {
      // Storage's address range is full (docs/limits.md): too much input, not a bug.
      throw input_error({main_path, 0, 0}, e.what());
    }
    return std::move(cfg_);
  }

  /// Each of `paths` as one more top-level file of the same configuration (a folder of site
  /// files): `roots[i]` is the expanded tree of paths[i], `indices[i]` its config::files index.
  config run_each(const std::vector<std::string>& paths, std::vector<list<directive>>& roots,
                  std::vector<std::uint32_t>& indices) {
    cfg_.conf_prefix = options_.conf_prefix ? *options_.conf_prefix : std::string(".");
    cfg_.chains.emplace_back();
    const std::string& first = paths.empty() ? std::string() : paths.front();
    try {
      for (const auto& path : paths) {
        const std::uint32_t index = file_index(path, {path, 0, 0}, block_context::directives);
        active_.push_back(index);
        roots.push_back(expand(cfg_.files[index].parsed, 0, block_context::directives));
        active_.pop_back();
        mark(index, expanded);
        indices.push_back(index);
      }
    } catch (const std::length_error& e) {
      throw input_error({first, 0, 0}, e.what());
    }
    return std::move(cfg_);
  }

 private:
  list<directive> parse(std::string_view content, const std::string& path, std::uint32_t index,
                        block_context context) {
    return detail::parse_in_context(content, path, index, context, options_.max_depth,
                                    options_.max_args_per_directive, options_.max_directives,
                                    *cfg_.store, block_depth_);
  }

  /// The index of `path` in cfg_.files, reading and parsing it on first use. A file is
  /// parsed in the context of its first include site; another context re-checks it.
  std::uint32_t file_index(const std::string& path, const source_location& from,
                           block_context context) {
    const std::string key = normalize(path);
    if (auto it = index_.find(key); it != index_.end()) {
      if (checked_.insert({it->second, context}).second) {
        // Only for its errors: the tree (kept in storage) is the first one.
        const source_file& f = cfg_.files[it->second];
        parse(f.content, f.path, it->second, context);
      }
      return it->second;
    }
    if (cfg_.files.size() >= options_.max_included_files) {
      throw input_error(from, "more than " + std::to_string(options_.max_included_files) +
                                  " configuration files (max_included_files)");
    }
    const auto index = static_cast<std::uint32_t>(cfg_.files.size());
    source_file f;
    f.path = path;
    f.content = source_.read(path, from, *cfg_.store);
    std::tie(f.device, f.inode) = source_.last_read_identity();
    if (f.content.size() > options_.max_file_bytes) {
      throw input_error(from, "\"" + path + "\" is larger than the limit of " +
                                  std::to_string(options_.max_file_bytes) +
                                  " bytes (max_file_bytes)");
    }
    // Parsed inside the blocks open at the include site, so that the parser's recursion
    // and expand()'s together stay within max_depth levels (stack overflow under ASan).
    f.parsed = parse(f.content, f.path, index, context);
    // memmem: string_view::find hunts the marker's first byte, and `n` is everywhere.
    f.suppressions = ::memmem(f.content.data(), f.content.size(), suppression_marker.data(),
                              suppression_marker.size()) != nullptr;
    cfg_.files.push_back(std::move(f));
    index_.emplace(key, index);
    checked_.insert({index, context});
    return index;
  }

  source_location where(const directive& d) const { return cfg_.where(d); }

  static bool is_include(const directive& d) {
    return d.name == "include" && !d.has_block && !d.lua;
  }

  /// Counts a shared run toward max_directives like a copied one; with `stamp`, sets each of
  /// its records' chain to `chain` (the run's file is being expanded for the first time, and
  /// its records are not yet part of the expanded tree anywhere).
  void count_shared(list<directive> run, std::uint32_t chain, bool stamp) {
    for (const directive& d : run) {
      if (++directives_ > options_.max_directives) {
        throw input_error(where(d), detail::too_many_directives(options_.max_directives),
                          chain_locations(chain));
      }
      // The records live in the config's own storage, written only by this loader.
      if (stamp) const_cast<directive&>(d).chain = chain;
      if (d.has_block) count_shared(d.block, chain, stamp);
    }
  }

  /// What is known of a file's records (file_state_ bits, per config::files index).
  static constexpr std::uint8_t expanded = 1;  ///< expanded before: its records may be in the tree
  static constexpr std::uint8_t stamped = 2;   ///< some of its records carry a chain
  bool has(std::uint32_t index, std::uint8_t bit) const {
    return index < file_state_.size() && (file_state_[index] & bit) != 0;
  }
  void mark(std::uint32_t index, std::uint8_t bit) {
    if (file_state_.size() <= index) file_state_.resize(index + 1);
    file_state_[index] |= bit;
  }

  /// The expanded form of `src` (directives of one block of a file's own tree) under include
  /// chain `chain`: each include replaced by the directives of the files it names. A run that
  /// holds no include is the file's own run, shared, not copied: reached without includes
  /// (chain 0) while no record of its file carries a chain, or in the first expansion of its
  /// file, its records then stamped with `chain` in place (a site file included once, the
  /// usual case, costs no second copy of its blocks). Other expansions copy.
  list<directive> expand(list<directive> src, std::uint32_t chain, block_context context) {
    if (src.empty()) return src;
    bool holds_include = false;
    if (!options_.single_file) {
      for (const directive& d : src)
        holds_include = holds_include || is_include(d) || d.include_below;
    }
    if (!holds_include) {
      const std::uint32_t file = src.front().file;
      if (chain == 0 && !has(file, stamped)) {
        count_shared(src, chain, false);
        return src;
      }
      if (chain != 0 && !has(file, expanded)) {
        mark(file, stamped);
        count_shared(src, chain, true);
        return src;
      }
    }
    std::vector<directive> out;
    out.reserve(src.size());
    expand_into(src, chain, context, out);
    return cfg_.store->copy(out.data(), out.size());
  }

  /// Appends the expanded form of `src` to `out`. An include's files are appended straight
  /// into the block that holds the include, so each directive is copied into storage once,
  /// with its block, not once per level of includes above it (an include bomb's memory and
  /// time grew with the depth of the chain times the directives).
  void expand_into(list<directive> src, std::uint32_t chain, block_context context,
                   std::vector<directive>& out) {
    for (const directive& d : src) {
      if (!options_.single_file && is_include(d)) {
        include(d, chain, context, out);
        continue;
      }
      if (++directives_ > options_.max_directives) {
        throw input_error(where(d), detail::too_many_directives(options_.max_directives),
                          chain_locations(chain));
      }
      directive copy = d;
      copy.chain = chain;
      if (d.has_block) {
        // The parser bounds nesting per file; blocks that include files with blocks nest
        // further, and expand() recurses once per level (a stack overflow at 64 includes
        // of 255 levels each, found by the fuzz work): bound the whole nesting too.
        if (++block_depth_ > options_.max_depth) {
          throw input_error(where(d),
                            "blocks nested deeper than the limit of " +
                                std::to_string(options_.max_depth) +
                                " (max_depth), counting blocks in included files",
                            chain_locations(chain));
        }
        copy.block = expand(d.block, chain, context_of(kind_of(d.name, context)));
        --block_depth_;
      }
      out.push_back(copy);
    }
  }

  void include(const directive& d, std::uint32_t chain, block_context context,
               std::vector<directive>& out) {
    const source_location site = where(d);
    // The chain is spelled out only for an error: an include bomb reaches millions of sites.
    const auto site_chain = [&] { return chain_locations(chain); };
    if (d.args.size() != 1) {
      throw input_error(site, "invalid number of arguments in \"include\" directive", site_chain());
    }
    const std::string pattern = full_name(cfg_.conf_prefix, d.args[0].value());
    std::vector<std::string> paths;
    if (has_glob_chars(pattern)) {
      file_source::glob_result found;
      try {
        found = source_.glob(pattern, options_.max_glob_matches, options_.max_glob_entries);
      } catch (const input_error& e) {
        throw input_error(site, e.message(), site_chain());
      }
      paths = std::move(found.paths);
      for (const auto& unreadable : found.unreadable) {
        // A named pair, not a structured binding: clang 14 cannot capture those in a lambda.
        const std::string& dir = unreadable.first;
        const int err = unreadable.second;
        const bool known = std::any_of(
            cfg_.unread_directories.begin(), cfg_.unread_directories.end(),
            [&](const unread_directory& u) { return u.directory == dir && u.include == site; });
        if (!known) cfg_.unread_directories.push_back({site, dir, std::strerror(err)});
      }
      if (found.matches > options_.max_glob_matches) {
        throw input_error(site,
                          "include \"" + pattern + "\" matches " + std::to_string(found.matches) +
                              " files, more than the limit of " +
                              std::to_string(options_.max_glob_matches) + " (max_glob_matches)",
                          site_chain());
      }
    } else {
      paths.push_back(pattern);
    }
    if (active_.size() >= options_.max_include_depth) {
      throw input_error(site,
                        "includes nested deeper than the limit of " +
                            std::to_string(options_.max_include_depth) + " (max_include_depth)",
                        site_chain());
    }
    // A glob's files are read ahead while each is parsed and expanded (a source may decline).
    struct read_ahead_scope {
      file_source& source;
      bool on;
      ~read_ahead_scope() {
        if (on) source.stop_read_ahead();
      }
    } ahead{source_, paths.size() > 1 && source_.start_read_ahead(paths)};
    std::vector<std::uint32_t> indices;
    for (const auto& path : paths) {
      std::uint32_t index;
      try {
        index = file_index(path, site, context);
      } catch (const input_error& e) {
        if (!e.include_chain().empty()) throw;
        // A file that cannot be read is reported at the include; an error inside the
        // file carries the include that brought it in.
        const bool at_site = e.where() == site;
        if (at_site && options_.relative_includes_may_be_missing && paths.size() == 1 &&
            pattern == path && !d.args[0].value().starts_with("/") &&
            e.message() == syscall_failed("open()", path, ENOENT)) {
          cfg_.missing_includes.push_back({site, path});
          continue;
        }
        std::vector<source_location> chain = site_chain();
        if (!at_site) chain.push_back(site);
        throw input_error(e.where(), e.message(), std::move(chain));
      }
      indices.push_back(index);
      if (std::find(active_.begin(), active_.end(), index) != active_.end()) {
        // nginx has no guard here (1.22 segfaults, docs/nginx-facts.md#parsing); name the active
        // chain.
        std::string message = "include cycle: ";
        for (const auto& f : site_chain()) message += to_string(f) + " -> ";
        message += to_string(site) + " includes \"" + cfg_.files[index].path +
                   "\", which is already being included";
        throw input_error(site, message, site_chain());
      }
      // Each expansion is counted like a directive: files of nothing but includes (or
      // empty ones) add no directives yet grow the chains exponentially.
      if (++directives_ > options_.max_directives) {
        throw input_error(site, detail::too_many_directives(options_.max_directives), site_chain());
      }
      // An include bomb (a file that includes the next one twice, and so on) stays under
      // every other limit for millions of expansions: bound the expansions themselves.
      if (++expansions_ > options_.max_include_expansions) {
        throw input_error(site,
                          "more than " + std::to_string(options_.max_include_expansions) +
                              " files expanded by includes, counting every include site "
                              "(max_include_expansions; an include bomb?)",
                          site_chain());
      }
      cfg_.chains.push_back({chain, {d.file, site.line, site.column}});
      const auto new_chain = static_cast<std::uint32_t>(cfg_.chains.size() - 1);
      active_.push_back(index);
      expand_into(cfg_.files[index].parsed, new_chain, context, out);
      active_.pop_back();
      mark(index, expanded);
    }
    // The site's own file records what it named (first expansion only: the same text
    // names the same files at every site).
    cfg_.files[d.file].includes.try_emplace(&d, std::move(indices));
  }

  std::vector<source_location> chain_locations(std::uint32_t chain) const {
    std::vector<source_location> out;
    for (const auto& f : cfg_.chain_frames(chain))
      out.push_back({cfg_.files[f.file].path, f.line, f.column});
    return out;
  }

  file_source& source_;
  const load_options& options_;
  config cfg_;
  std::map<std::string, std::uint32_t> index_;
  std::set<std::pair<std::uint32_t, block_context>> checked_;
  std::vector<std::uint8_t> file_state_;  ///< per config::files index: see has()
  std::vector<std::uint32_t> active_;
  std::size_t directives_ = 0;
  std::size_t expansions_ = 0;   ///< files expanded by includes, every site counted
  std::size_t block_depth_ = 0;  ///< blocks open in the expanded tree, across includes
};

constexpr std::string_view marker_prefix = "# configuration file ";

struct dump_marker {
  std::size_t line_start;     ///< offset of the `#`
  std::size_t content_start;  ///< offset after the marker's line feed
  std::string path;
};

/// Every line of the form `# configuration file PATH:`.
std::vector<dump_marker> find_markers(std::string_view dump) {
  std::vector<dump_marker> out;
  std::size_t pos = 0;
  while (pos < dump.size()) {
    std::size_t eol = dump.find('\n', pos);
    const std::size_t end = eol == std::string_view::npos ? dump.size() : eol;
    std::string_view line = dump.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > marker_prefix.size() + 1 &&
        line.substr(0, marker_prefix.size()) == marker_prefix && line.back() == ':') {
      out.push_back(
          {pos, eol == std::string_view::npos ? dump.size() : eol + 1,
           std::string(line.substr(marker_prefix.size(), line.size() - marker_prefix.size() - 1))});
    }
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
  }
  return out;
}

/// nginx -T writes each file's bytes followed by one line feed.
std::string_view strip_dump_newline(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text;
}

/// One `include` of a dumped file, as nginx opens its files: a literal path (which must
/// exist, or nginx would have failed) or a glob (whose matches nginx opens in sorted order;
/// any of them may be missing from the dump's files).
struct include_item {
  std::string pattern;  ///< resolved against the prefix and normalized
  bool glob = false;
};

/// The includes of `text` in the order nginx processes them (text order, blocks included),
/// or nullopt when `text` does not parse as a whole file: nginx -T prints only
/// configurations that load, so a file boundary never falls where the text before it
/// does not parse. `text` lies in a storage (the dump's): it is parsed where it is, its tree
/// into `records`.
std::optional<std::vector<include_item>> includes_in_order(std::string_view text,
                                                           const std::string& prefix,
                                                           storage& records) {
  list<directive> tree;
  try {
    const load_options defaults;
    tree =
        detail::parse_in_context(text, "<dump>", 0, block_context::directives, defaults.max_depth,
                                 defaults.max_args_per_directive, defaults.max_directives, records);
  } catch (const input_error&) {
    return std::nullopt;
  }
  std::vector<include_item> out;
  // An explicit stack of (run, next index): text order, without recursion.
  std::vector<std::pair<list<directive>, std::size_t>> todo{{tree, 0}};
  while (!todo.empty()) {
    auto& [run, i] = todo.back();
    if (i == run.size()) {
      todo.pop_back();
      continue;
    }
    const directive& d = run[i++];
    if (d.name == "include" && !d.has_block && !d.lua && d.args.size() == 1) {
      const std::string pattern = resolve_file(prefix, d.args[0].value());
      out.push_back({pattern, has_glob_chars(pattern)});
    }
    if (d.has_block) todo.emplace_back(d.block, 0);
  }
  return out;
}

/// Whether `text` starts like an `nginx -T` dump: decided by its first line that is not blank
/// and not one of nginx's own "nginx: ..." lines (a dump starts with a file marker), or
/// nullopt when there is no such line.
std::optional<bool> dump_verdict(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    const std::size_t end = eol == std::string_view::npos ? text.size() : eol;
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // Skip blank lines and nginx's own "syntax is ok" / "test is successful" lines.
    const bool skip = line.empty() || line.substr(0, 7) == "nginx: ";
    if (!skip) {
      return line.size() > marker_prefix.size() + 1 &&
             line.substr(0, marker_prefix.size()) == marker_prefix && line.back() == ':';
    }
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
  }
  return std::nullopt;
}

/// The markers of `dump` that start files, main file first. nginx -T prints the files in
/// the order it opened them, each once: depth first, each include's files when nginx
/// reaches the include, a glob's matches sorted. A marker starts a file only where that
/// walk opens it next, judged from the files read so far and the markers still ahead:
/// it names an unprinted file; the text before it parses as a whole file; and it is what
/// the next include leads to (a literal include's file, or the first of a glob's matches
/// among the unprinted paths of the markers ahead; a glob with none of those left is
/// passed over). Any other marker-like line (a comment in a file) is part of the file it
/// sits in. The dump itself cannot tell a file that holds such a comment from two files
/// when the comment names exactly the file nginx would open next: that reads as two.
/// Each file's text is parsed once when the next file starts; a marker-like line whose
/// path is unprinted costs one more parse of the text before it, bounded in total.
std::vector<const dump_marker*> split_dump(std::string_view dump, const std::string& dump_name,
                                           const std::vector<dump_marker>& markers,
                                           const std::string& prefix) {
  // One opened file's includes and how far nginx has got through them.
  struct frame {
    std::vector<include_item> items;
    std::size_t next = 0;   ///< first item not finished
    std::string glob_last;  ///< within items[next] (a glob): the last match opened
  };
  std::vector<std::string> paths;  // normalized, per marker
  paths.reserve(markers.size());
  std::map<std::string, std::size_t> ahead;  // path -> markers at or after the current one
  for (const auto& m : markers) ++ahead[paths.emplace_back(normalize(m.path))];
  std::set<std::string> seen;
  // Per glob pattern: the paths of markers that match it, less those found printed or
  // with no marker left ahead (erased as they are met: they never come back).
  std::map<std::string, std::set<std::string>> glob_paths;
  auto alive = [&](const std::string& p) { return !seen.count(p) && ahead[p] > 0; };
  auto first_match = [&](const std::string& pattern,
                         const std::string& after) -> std::optional<std::string> {
    auto g = glob_paths.find(pattern);
    if (g == glob_paths.end()) {
      // Only paths under the pattern's literal start can match: a dump whose every site
      // includes a glob of its own must not test every path against every glob.
      const std::string start = pattern.substr(0, pattern.find_first_of("*?[\\"));
      std::set<std::string> matches;
      for (auto p = ahead.lower_bound(start);
           p != ahead.end() && p->first.compare(0, start.size(), start) == 0; ++p) {
        if (::fnmatch(pattern.c_str(), p->first.c_str(), FNM_PATHNAME | FNM_PERIOD) == 0)
          matches.insert(p->first);
      }
      g = glob_paths.emplace(pattern, std::move(matches)).first;
    }
    std::set<std::string>& set = g->second;
    auto it = after.empty() ? set.begin() : set.upper_bound(after);
    while (it != set.end() && !alive(*it)) it = set.erase(it);
    if (it == set.end()) return std::nullopt;
    return *it;
  };

  std::vector<frame> stack;  ///< the files being read, outermost first (not the current one)
  std::vector<const dump_marker*> accepted{&markers[0]};
  seen.insert(paths[0]);
  --ahead[paths[0]];
  // Parses beyond one per file are paid by marker-like lines: a dump made of thousands of
  // them must not take quadratic time.
  std::size_t parse_budget_bytes = 4 * dump.size() + (std::size_t{16} << 20);
  // The trees parsed to find includes share a storage, renewed once it holds as much as the
  // dump: one storage per file cost a mapping and its release per file of a dump of thousands.
  std::optional<storage> records;
  for (std::size_t i = 1; i < markers.size(); ++i) {
    const dump_marker& m = markers[i];
    const std::string& path = paths[i];
    const bool candidate = alive(path);
    if (!candidate) {
      --ahead[path];
      continue;
    }
    const dump_marker& cur = *accepted.back();
    const std::string_view text =
        strip_dump_newline(dump.substr(cur.content_start, m.line_start - cur.content_start));
    if (text.size() > parse_budget_bytes) {
      throw input_error({dump_name, 0, 0},
                        "too many lines shaped like \"# configuration file PATH:\" to split "
                        "the dump into its files");
    }
    parse_budget_bytes -= text.size();
    if (!records || records->bytes_used() > dump.size()) records.emplace();
    std::optional<std::vector<include_item>> current = includes_in_order(text, prefix, *records);
    // Walk the open files from the innermost (the current one, none of whose includes is
    // opened yet) outwards, to the include that opens the next file.
    std::optional<std::pair<std::size_t, std::size_t>> at;  // (frame, item) that opens `path`
    bool blocked = !current.has_value();  // inside a block, a string, ...: no file boundary
    auto scan = [&](const std::vector<include_item>& items, std::size_t from,
                    const std::string& glob_last, std::size_t level) {
      for (std::size_t j = from; j < items.size() && !at && !blocked; ++j) {
        const include_item& it = items[j];
        std::optional<std::string> next;
        if (!it.glob) {
          if (alive(it.pattern)) next = it.pattern;
        } else {
          next = first_match(it.pattern, j == from ? glob_last : std::string());
        }
        if (!next) continue;  // printed already, or nothing of it left ahead
        if (*next == path) {
          at.emplace(level, j);
        } else {
          blocked = true;  // nginx opens *next first
        }
      }
    };
    if (current) scan(*current, 0, {}, stack.size());
    for (std::size_t level = stack.size(); level-- > 0 && !at && !blocked;)
      scan(stack[level].items, stack[level].next, stack[level].glob_last, level);
    --ahead[path];
    if (!at) continue;
    // `m` starts the next file: the current one is complete, and nginx is at include
    // at->second of open file at->first.
    stack.push_back({std::move(*current), 0, {}});
    stack.resize(at->first + 1);
    frame& f = stack.back();
    if (f.next != at->second) f.glob_last.clear();
    f.next = at->second;
    if (f.items[f.next].glob) {
      f.glob_last = path;
    } else {
      ++f.next;
      f.glob_last.clear();
    }
    accepted.push_back(&m);
    seen.insert(path);
  }
  return accepted;
}

}  // namespace

std::unique_ptr<file_source> make_disk_source() {
  return std::make_unique<disk_source>(load_options{}.max_file_bytes);
}

std::unique_ptr<file_source> make_memory_source(std::map<std::string, std::string> files) {
  return std::make_unique<memory_source>(std::move(files));
}

config load(const std::string& main_path, file_source& source, const load_options& options) {
  return loader(source, options).run(main_path);
}

config load_each(const std::vector<std::string>& paths, file_source& source,
                 const load_options& options, std::vector<list<directive>>& roots,
                 std::vector<std::uint32_t>& indices) {
  return loader(source, options).run_each(paths, roots, indices);
}

config load_buffer(stored_text content, const std::string& name, file_source& source,
                   const load_options& options) {
  overlay_source overlay(name, content.bytes, source);
  load_options o = options;
  if (!o.conf_prefix) o.conf_prefix = ".";
  return loader(overlay, o, std::move(content.store)).run(name);
}

config load_buffer(std::string_view content, const std::string& name, file_source& source,
                   const load_options& options) {
  stored_text text;
  text.bytes = text.store->adopt(content);
  return load_buffer(std::move(text), name, source, options);
}

stored_text read_stream_bounded(int fd, const std::string& name, std::size_t max_bytes) {
  const auto too_big = [&] {
    return input_error({name, 0, 0}, "the input is larger than the limit of " +
                                         std::to_string(max_bytes) + " bytes (max_file_bytes)");
  };
  stored_text out;
  // A regular file (`< nginx.conf`) says how much is left: one chunk in the result holds it
  // all (and one byte more, to see the end), so it is read once and never copied.
  std::size_t first = std::size_t{64} << 10;
  bool exact = false;
  struct stat sb {};
  if (::fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
    const off_t at = std::max<off_t>(::lseek(fd, 0, SEEK_CUR), 0);
    const auto left = static_cast<std::size_t>(sb.st_size > at ? sb.st_size - at : 0);
    if (left > max_bytes) throw too_big();
    // A procfs file says 0 and still has bytes: read it as a pipe.
    if (left > 0) {
      first = left + 1;
      exact = true;
    }
  }
  // Chunks after the first live in `scratch`, which gives its memory back when it goes:
  // a pipe's bytes are copied once, into one buffer, at the end.
  storage scratch;
  struct chunk {
    char* at;
    std::size_t size, filled;
  };
  std::vector<chunk> chunks;
  std::size_t total = 0;
  for (;;) {
    if (chunks.empty() || chunks.back().filled == chunks.back().size) {
      if (total > max_bytes) throw too_big();
      // Doubling, and never past one byte over the limit (that byte tells a stream at the
      // limit from a longer one).
      const std::size_t want = chunks.empty() ? first : std::max(total, first);
      const std::size_t size = std::min(want, max_bytes + 1 - total);
      storage& into = chunks.empty() && exact ? *out.store : scratch;
      chunks.push_back({into.allocate<char>(size), size, 0});
    }
    chunk& c = chunks.back();
    const ssize_t n = ::read(fd, c.at + c.filled, c.size - c.filled);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw input_error({name, 0, 0}, syscall_failed("read()", name, errno));
    }
    if (n == 0) break;
    c.filled += static_cast<std::size_t>(n);
    total += static_cast<std::size_t>(n);
  }
  if (total > max_bytes) throw too_big();
  if (exact && chunks.size() == 1) {
    out.bytes = {chunks.front().at, total};
    return out;
  }
  char* bytes = out.store->allocate<char>(std::max<std::size_t>(total, 1));
  std::size_t at = 0;
  for (const chunk& c : chunks) {
    if (c.filled > 0) std::memcpy(bytes + at, c.at, c.filled);
    at += c.filled;
  }
  out.bytes = {bytes, total};
  return out;
}

config load_file(const std::string& main_path, const load_options& options) {
  disk_source source(options.max_file_bytes);
  // Read once, into the config's storage; a saved `nginx -T` dump is loaded as a dump.
  stored_text text;
  text.bytes = source.read(main_path, {main_path, 0, 0}, *text.store);
  if (looks_like_dump(text.bytes)) return load_dump(std::move(text), main_path, options);
  overlay_source overlay(main_path, text.bytes, source);
  return loader(overlay, options, std::move(text.store)).run(main_path);
}

config load_dump(stored_text dump, const std::string& dump_name, const load_options& options) {
  const std::vector<dump_marker> markers = find_markers(dump.bytes);
  if (markers.empty()) {
    throw input_error({dump_name, 0, 0},
                      "not an nginx -T dump: no \"# configuration file PATH:\" line");
  }
  if (dump.bytes.size() > options.max_file_bytes) {
    throw input_error({dump_name, 0, 0}, "the dump is larger than the limit of " +
                                             std::to_string(options.max_file_bytes) +
                                             " bytes (max_file_bytes)");
  }
  const std::string prefix =
      options.conf_prefix ? *options.conf_prefix : directory_of(markers[0].path);
  std::vector<const dump_marker*> accepted = split_dump(dump.bytes, dump_name, markers, prefix);
  // Each file is a view into the dump, which the config keeps.
  std::map<std::string, std::string_view> files;
  for (std::size_t i = 0; i < accepted.size(); ++i) {
    const std::size_t begin = accepted[i]->content_start;
    const std::size_t end =
        i + 1 < accepted.size() ? accepted[i + 1]->line_start : dump.bytes.size();
    files.emplace(accepted[i]->path, strip_dump_newline(dump.bytes.substr(begin, end - begin)));
  }
  memory_source source(files);
  load_options o = options;
  o.conf_prefix = prefix;
  config out = loader(source, o, std::move(dump.store)).run(markers[0].path);
  out.from_dump = true;
  return out;
}

config load_dump(std::string_view dump, const std::string& dump_name, const load_options& options) {
  stored_text text;
  text.bytes = text.store->adopt(dump);
  return load_dump(std::move(text), dump_name, options);
}

bool looks_like_dump(std::string_view text) {
  return dump_verdict(text).value_or(false);
}

}  // namespace ngxtls::config
