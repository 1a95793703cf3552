// Site files, snippets and directories read inside the block nginx reads them in.

#include "config/site_files.hpp"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "base/error.hpp"

namespace ngxtls::config {

namespace {

bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Directives nginx allows only in the main context (and the blocks it opens there): their
// presence makes a file a main nginx.conf. nginx documentation, "Context: main".
bool main_only(std::string_view n) {
  return one_of(n, {"events",
                    "http",
                    "stream",
                    "mail",
                    "load_module",
                    "user",
                    "worker_processes",
                    "worker_rlimit_nofile",
                    "worker_rlimit_core",
                    "worker_cpu_affinity",
                    "worker_priority",
                    "worker_shutdown_timeout",
                    "working_directory",
                    "pid",
                    "daemon",
                    "master_process",
                    "env",
                    "lock_file",
                    "pcre_jit",
                    "thread_pool",
                    "timer_resolution",
                    "ssl_engine",
                    "debug_points",
                    "google_perftools_profiles"});
}

// Directives allowed in an http server (or location) but not at the http level: a file whose
// top level holds one is a server snippet. nginx documentation, "Context: server, location".
bool server_level(std::string_view n) {
  return one_of(n,
                {"listen", "server_name", "location", "if", "return", "rewrite", "set", "break"});
}

// Directives allowed in a location but neither in server nor http: a location snippet.
bool location_only(std::string_view n) {
  return one_of(n, {"proxy_pass", "fastcgi_pass", "uwsgi_pass", "scgi_pass", "grpc_pass",
                    "memcached_pass", "alias", "internal", "limit_except"});
}

// Directives of an http server that a stream server does not take: one of them in a server
// makes the file an http one even when it also holds a proxy_pass.
bool http_server_only(std::string_view n) {
  return one_of(n, {"location", "root", "index", "try_files", "add_header", "rewrite", "if",
                    "error_page", "client_max_body_size", "proxy_set_header", "http2",
                    "fastcgi_pass", "auth_basic", "autoindex"});
}

// `proxy_pass HOST:PORT` (no scheme): the stream form; in an http server nginx says
// `"proxy_pass" directive is not allowed here`, and in a location `invalid URL prefix`.
bool stream_proxy_pass(const directive& d) {
  return d.name == "proxy_pass" && !d.has_block && d.args.size() == 1 &&
         d.args[0].value().find("://") == std::string_view::npos;
}

// Directives of the mail modules that neither http nor stream takes: one of them at the top
// level (beside server blocks) makes the file the body of a `mail { }` block. nginx
// documentation, ngx_mail_*_module, "Context: mail, server".
bool mail_only(std::string_view n) {
  // Every imap_*, pop3_* and smtp_* directive is the mail modules' (imap_capabilities,
  // pop3_auth, smtp_client_buffer, ...).
  return n.rfind("imap_", 0) == 0 || n.rfind("pop3_", 0) == 0 || n.rfind("smtp_", 0) == 0 ||
         one_of(n, {"auth_http", "auth_http_header", "auth_http_pass_client_cert",
                    "auth_http_timeout", "proxy_pass_error_message", "proxy_smtp_auth", "starttls",
                    "protocol", "xclient", "mail_proxy_buffer"});
}

// A directive only a stream server takes: `ssl_preread`, `listen ... udp`, or the stream form of
// `proxy_pass` (stream_proxy_pass()).
bool stream_server_marker(const directive& d) {
  if (d.name == "ssl_preread") return true;
  if (d.name == "listen")
    for (std::size_t i = 1; i < d.args.size(); ++i)
      if (d.args[i].value() == "udp") return true;
  return stream_proxy_pass(d);
}

// An http server's `return CODE [...]` (a three-digit status): a stream server's `return` takes
// one value and no status.
bool http_return(const directive& d) {
  if (d.name != "return" || d.args.empty()) return false;
  const auto v = d.args[0].value();
  return v.size() == 3 &&
         std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

const directive* first_named(list<directive> run, bool (*pred)(std::string_view)) {
  for (const auto& d : run)
    if (pred(d.name)) return &d;
  return nullptr;
}

struct shape {
  implied_context context = implied_context::none;
  std::string reason;
};

std::string at(const config& cfg, const directive& d) {
  return to_string(cfg.where(d));
}

shape classify(const config& cfg, list<directive> root) {
  shape out;
  if (root.empty()) return out;
  if (first_named(root, main_only)) return out;
  // Before the server-level test: a mail body often starts with server_name, which a mail
  // block takes too, while its mail-only directives belong to no http or stream block.
  if (const directive* d = first_named(root, mail_only)) {
    out.context = implied_context::mail;
    out.reason = "its top level holds \"" + std::string(d->name) + "\" (" + at(cfg, *d) +
                 "), a directive of nginx's mail modules that neither http nor stream takes";
    return out;
  }
  for (const auto& s : root)
    if (s.name == "server" && s.has_block)
      if (const directive* d = first_named(s.block, mail_only)) {
        out.context = implied_context::mail;
        out.reason = "its server at " + at(cfg, s) + " holds \"" + std::string(d->name) + "\" (" +
                     at(cfg, *d) +
                     "), a directive of nginx's mail modules that neither http nor stream takes";
        return out;
      }
  if (const directive* d = first_named(root, server_level)) {
    out.context = implied_context::http_server;
    out.reason = "its top level holds \"" + std::string(d->name) + "\" (" + at(cfg, *d) +
                 "), which nginx allows in a server, not in http";
    return out;
  }
  std::vector<const directive*> servers;
  for (const auto& d : root)
    if (d.name == "server" && d.has_block) servers.push_back(&d);
  if (servers.empty()) {
    if (const directive* d = first_named(root, location_only)) {
      out.context = implied_context::http_location;
      out.reason = "its top level holds \"" + std::string(d->name) + "\" (" + at(cfg, *d) +
                   "), which nginx allows only in a location";
      return out;
    }
  }
  // Stream when a server holds a directive only stream takes (`proxy_pass HOST:PORT` in the
  // server itself, `ssl_preread`, `listen ... udp`) and none holds an http-only directive: read
  // inside http, nginx refuses each of those lines.
  const directive* marker = nullptr;
  bool http_marker = false;
  for (const directive* s : servers)
    for (const auto& c : s->block) {
      if (!marker && stream_server_marker(c)) marker = &c;
      if (http_server_only(c.name) || http_return(c)) http_marker = true;
    }
  if (marker && !http_marker) {
    out.context = implied_context::stream;
    std::string what(marker->name);
    for (const auto& a : marker->args) what += " " + std::string(a.value());
    out.reason = "its servers hold \"" + what + "\" (" + at(cfg, *marker) +
                 "), which only a stream server takes, and no http-only directive";
    return out;
  }
  out.context = implied_context::http;
  out.reason = servers.empty()
                   ? "its top level holds http-level directives and no main-context block"
                   : "its top level holds server blocks and no main-context block";
  return out;
}

/// The shape `s` with the block `forced` (--context) instead of the one implied: an http snippet
/// stays in its implied server when http is forced; a main nginx.conf stays as it is.
shape force(shape s, std::optional<implied_context> forced) {
  if (!forced || s.context == implied_context::none) return s;
  if (*forced == implied_context::http &&
      (s.context == implied_context::http_server || s.context == implied_context::http_location))
    return s;
  s.reason = "--context " + context_name(*forced) + " (its shape alone says " +
             context_name(s.context) + ")";
  s.context = *forced;
  return s;
}

/// The context block (http, stream or mail) of an `include` in the nginx.conf beside or above
/// `path` whose pattern names `path`: where nginx itself reads the file. Reads at most two
/// candidate nginx.conf files (the file's folder and its parent), each on its own
/// (single_file: no include is followed), bounded as every input is.
std::optional<shape> include_site(const std::string& path, const load_options& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path file = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return std::nullopt;
  for (const fs::path& dir : {file.parent_path(), file.parent_path().parent_path()}) {
    const fs::path conf = dir / "nginx.conf";
    if (conf == file || !fs::is_regular_file(conf, ec)) continue;
    load_options o;
    o.single_file = true;
    o.max_file_bytes = options.max_file_bytes;
    o.max_directives = options.max_directives;
    std::optional<config> main;
    try {
      main = load_file(conf.string(), o);
    } catch (const input_error&) {
      continue;  // not a config nginx would start with: no evidence of where it includes
    }
    if (main->from_dump) continue;
    const std::string prefix = options.conf_prefix ? *options.conf_prefix : dir.string();
    // Depth first, remembering the outermost context block.
    struct item {
      list<directive> run;
      std::string_view context;
    };
    std::vector<item> todo{{main->root, {}}};
    while (!todo.empty()) {
      item it = todo.back();
      todo.pop_back();
      for (const auto& d : it.run) {
        if (d.has_block) {
          std::string_view ctx = it.context;
          if (ctx.empty() && (d.name == "http" || d.name == "stream" || d.name == "mail"))
            ctx = d.name;
          todo.push_back({d.block, ctx});
          continue;
        }
        if (d.name != "include" || d.args.size() != 1 || it.context.empty()) continue;
        std::string pattern(d.args[0].value());
        if (pattern.empty()) continue;
        if (pattern[0] != '/') pattern = prefix + "/" + pattern;
        const std::string normal = fs::path(pattern).lexically_normal().string();
        if (::fnmatch(normal.c_str(), file.c_str(), FNM_PATHNAME) != 0) continue;
        shape s;
        s.context = it.context == "stream" ? implied_context::stream
                    : it.context == "mail" ? implied_context::mail
                                           : implied_context::http;
        s.reason = conf.string() + " includes it inside " + std::string(it.context) +
                   " { } (\"include " + std::string(d.args[0].value()) + "\" at " +
                   to_string(main->where(d)) + ")";
        return s;
      }
    }
  }
  return std::nullopt;
}

/// The block nginx reads site file `path` (loaded as `cfg`, its top level `root`) in: forced by
/// --context, else its include site when an nginx.conf beside it includes it, else its shape.
/// An http include site keeps a snippet's implied server or location.
shape context_of(const config& cfg, list<directive> root, const std::string& path,
                 const load_options& options) {
  shape by_shape = classify(cfg, root);
  if (by_shape.context == implied_context::none) return by_shape;
  if (options.site_context) return force(by_shape, options.site_context);
  if (path.empty()) return by_shape;
  if (auto site = include_site(path, options)) {
    if (site->context == implied_context::http &&
        (by_shape.context == implied_context::http_server ||
         by_shape.context == implied_context::http_location))
      return by_shape;
    return *site;
  }
  return by_shape;
}

/// A block directive named `name` around `children`, positioned at `at` (the first directive
/// it holds), its name and record kept in `store`.
const directive* make_block(storage& store, std::string_view name, list<directive> children,
                            const directive& at) {
  char* bytes = store.allocate<char>(name.size());
  std::memcpy(bytes, name.data(), name.size());
  directive d;
  d.name = std::string_view(bytes, name.size());
  d.block = children;
  d.has_block = true;
  d.file = at.file;
  d.line = at.line;
  d.column = at.column;
  d.offset = at.offset;
  d.chain = at.chain;
  directive* rec = store.allocate<directive>(1);
  std::uninitialized_copy(&d, &d + 1, rec);
  return rec;
}

/// `children` wrapped in the blocks of `c`, innermost first; every block made is recorded.
list<directive> wrap(config& cfg, list<directive> children, implied_context c) {
  storage& store = *cfg.store;
  const directive& first = children.front();
  auto one = [&](std::string_view name, list<directive> inner) {
    const directive* b = make_block(store, name, inner, first);
    cfg.implied_blocks.push_back(b);
    return list<directive>(b, 1);
  };
  switch (c) {
    case implied_context::none:
    case implied_context::http_directory:
      return children;
    case implied_context::http:
      return one("http", children);
    case implied_context::stream:
      return one("stream", children);
    case implied_context::mail:
      return one("mail", children);
    case implied_context::http_server:
      return one("http", one("server", children));
    case implied_context::http_location: {
      // `location /` takes one argument: the record holds it as a literal.
      const directive* loc = make_block(store, "location", children, first);
      char* slash = store.allocate<char>(1);
      *slash = '/';
      argument* arg = store.allocate<argument>(1);
      const argument a = argument::literal({slash, 1});
      std::uninitialized_copy(&a, &a + 1, arg);
      const_cast<directive*>(loc)->args = list<argument>(arg, 1);
      cfg.implied_blocks.push_back(loc);
      return one("http", one("server", list<directive>(loc, 1)));
    }
  }
  return children;
}

bool hidden(const std::string& name) {
  return !name.empty() && name[0] == '.';
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// The walk of plan_directory(): sorted, recursive, bounded.
struct dir_walk {
  const load_options& options;
  directory_plan& plan;
  std::size_t entries = 0;
  std::size_t bytes = 0;
  std::set<std::pair<dev_t, ino_t>> seen_files{};
  std::set<std::pair<dev_t, ino_t>> seen_dirs{};
  /// Pass over sites-available where sites-enabled is beside it (nginx reads the enabled ones);
  /// off for the listing of an nginx.conf tree, where every file not read is named.
  bool prefer_enabled = true;

  void walk(const std::string& dir, bool in_sites, std::size_t depth) {
    if (depth > options.max_include_depth) {
      plan.skipped.push_back({dir, "nested deeper than " +
                                       std::to_string(options.max_include_depth) +
                                       " directories (max_include_depth)"});
      return;
    }
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      plan.skipped.push_back({dir, std::string("cannot be read: ") + std::strerror(errno)});
      return;
    }
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
      if (++entries > options.max_glob_entries) {
        ::closedir(d);
        throw input_error({dir, 0, 0}, "the directory holds more than " +
                                           std::to_string(options.max_glob_entries) +
                                           " entries (max_glob_entries)");
      }
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    const bool has_enabled = std::find(names.begin(), names.end(), "sites-enabled") != names.end();
    for (const auto& name : names) {
      const std::string path = dir == "/" ? "/" + name : dir + "/" + name;
      if (hidden(name)) {
        plan.skipped.push_back({path, "hidden"});
        continue;
      }
      struct stat sb {};
      if (::stat(path.c_str(), &sb) != 0) {
        plan.skipped.push_back({path, std::string("cannot be read: ") + std::strerror(errno)});
        continue;
      }
      if (S_ISDIR(sb.st_mode)) {
        if (!seen_dirs.insert({sb.st_dev, sb.st_ino}).second) {
          plan.skipped.push_back({path, "a directory already read (a link loop?)"});
          continue;
        }
        if (name == "sites-available" && has_enabled && prefer_enabled) {
          plan.skipped.push_back({path, "sites-available: nginx reads sites-enabled"});
          continue;
        }
        walk(path, name.rfind("sites-", 0) == 0, depth + 1);
        continue;
      }
      if (!S_ISREG(sb.st_mode)) {
        plan.skipped.push_back({path, "not a regular file"});
        continue;
      }
      if (!(ends_with(name, ".conf") || in_sites)) {
        plan.skipped.push_back(
            {path, "not a usual nginx file name (*.conf, or a file in sites-*)"});
        continue;
      }
      if (!seen_files.insert({sb.st_dev, sb.st_ino}).second) {
        plan.skipped.push_back({path, "the same file as one read already (a link)"});
        continue;
      }
      if (plan.files.size() >= options.max_included_files) {
        throw input_error({dir, 0, 0}, "more than " + std::to_string(options.max_included_files) +
                                           " configuration files (max_included_files)");
      }
      bytes += static_cast<std::size_t>(sb.st_size);
      if (bytes > max_directory_bytes) {
        throw input_error({path, 0, 0}, "the directory's files hold more than " +
                                            std::to_string(max_directory_bytes) +
                                            " bytes (max_directory_bytes)");
      }
      plan.files.push_back(path);
    }
  }
};

std::string trim_slashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

std::string describe(implied_context c) {
  switch (c) {
    case implied_context::none:
      return "";
    case implied_context::http:
      return "inside http { }, as nginx reads a file from conf.d/ or sites-enabled/";
    case implied_context::stream:
      return "inside stream { }, as nginx reads a file included in a stream block";
    case implied_context::mail:
      return "inside mail { }, as nginx reads a file included in a mail block";
    case implied_context::http_server:
      return "inside server { } of an implied http { }, as a snippet included in a server";
    case implied_context::http_location:
      return "inside location / { } of an implied server, as a snippet included in a location";
    case implied_context::http_directory:
      return "every site file inside one http { }, as nginx reads conf.d/ and sites-enabled/";
  }
  return "";
}

std::string context_name(implied_context c) {
  switch (c) {
    case implied_context::none:
      return "main";
    case implied_context::http:
      return "http";
    case implied_context::stream:
      return "stream";
    case implied_context::mail:
      return "mail";
    case implied_context::http_server:
      return "server";
    case implied_context::http_location:
      return "location";
    case implied_context::http_directory:
      return "directory";
  }
  return "main";
}

void imply_context(config& cfg, const load_options& options) {
  if (cfg.from_dump || cfg.implied != implied_context::none || cfg.root.empty()) return;
  const std::string path =
      cfg.files.empty() || cfg.files.front().path == "<stdin>" ? "" : cfg.files.front().path;
  shape s = context_of(cfg, cfg.root, path, options);
  if (s.context == implied_context::none) return;
  cfg.root = wrap(cfg, cfg.root, s.context);
  cfg.implied = s.context;
  cfg.implied_reason = std::move(s.reason);
}

config load_site_file(const std::string& path, const load_options& options) {
  load_options o = options;
  // Without --conf-prefix the directory nginx resolves relative includes against (the main
  // nginx.conf's) is a guess for a site file: an include not found there is reported, not fatal.
  o.relative_includes_may_be_missing = !options.conf_prefix;
  if (!o.conf_prefix) {
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    const std::string name = dir.filename().string();
    if (name == "conf.d" || name.rfind("sites-", 0) == 0) {
      std::string parent = dir.parent_path().string();
      o.conf_prefix = parent.empty() ? std::string(".") : parent;
    }
  }
  config cfg = load_file(path, o);
  imply_context(cfg, options);
  if (cfg.implied == implied_context::none && !cfg.from_dump && !cfg.missing_includes.empty()) {
    // A main nginx.conf is its own conf prefix: a missing include stops nginx there.
    const missing_include& m = cfg.missing_includes.front();
    throw input_error(m.include, "open() \"" + m.path + "\" failed (" + std::to_string(ENOENT) +
                                     ": " + std::strerror(ENOENT) + ")");
  }
  return cfg;
}

config load_path(const std::string& path, const load_options& options) {
  if (!is_directory(path)) return load_site_file(path, options);
  directory_plan plan;
  config cfg = load_directory(path, options, plan);
  for (auto& s : plan.skipped) cfg.skipped_files.emplace_back(s.path, s.reason);
  return cfg;
}

bool is_directory(const std::string& path) {
  struct stat sb {};
  return ::stat(path.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode);
}

directory_plan plan_directory(const std::string& dir_in, const load_options& options) {
  const std::string dir = trim_slashes(dir_in);
  directory_plan plan;
  if (!is_directory(dir)) throw input_error({dir, 0, 0}, "not a directory");
  const std::string main = dir + "/nginx.conf";
  struct stat sb {};
  if (::stat(main.c_str(), &sb) == 0 && S_ISREG(sb.st_mode)) {
    plan.nginx_conf = true;
    plan.files.push_back(main);
    plan.conf_prefix = options.conf_prefix ? *options.conf_prefix : dir;
    return plan;
  }
  // A folder named like the ones nginx.conf includes (conf.d, sites-enabled) sits in the conf
  // prefix: relative paths in its files (include snippets/x.conf) resolve against the parent.
  const std::string name = base_name(dir);
  const bool included_folder = name == "conf.d" || name.rfind("sites-", 0) == 0;
  plan.conf_prefix = options.conf_prefix ? *options.conf_prefix
                     : included_folder   ? std::filesystem::path(dir).parent_path().string()
                                         : dir;
  if (plan.conf_prefix.empty()) plan.conf_prefix = ".";
  dir_walk walk{options, plan};
  walk.walk(dir, name.rfind("sites-", 0) == 0, 0);
  std::sort(plan.skipped.begin(), plan.skipped.end(),
            [](const skipped_file& a, const skipped_file& b) { return a.path < b.path; });
  return plan;
}

config load_directory(const std::string& dir, const load_options& options, directory_plan& plan) {
  plan = plan_directory(dir, options);
  load_options o = options;
  o.conf_prefix = plan.conf_prefix;
  o.relative_includes_may_be_missing = !options.conf_prefix && !plan.nginx_conf;
  if (plan.nginx_conf) {
    config cfg = load_file(plan.files.front(), o);
    // Files under the tree that nginx.conf does not reach are not what nginx runs.
    std::set<std::string> read;
    for (const auto& f : cfg.files)
      read.insert(std::filesystem::path(f.path.str()).lexically_normal().string());
    directory_plan listing;
    dir_walk walk{o, listing};
    walk.prefer_enabled = false;
    try {
      walk.walk(trim_slashes(dir), false, 0);
    } catch (const input_error&) {
      // Only a listing for the report: a huge tree leaves it incomplete, not the lint.
    }
    for (const auto& f : listing.files)
      if (!read.count(std::filesystem::path(f).lexically_normal().string()))
        plan.skipped.push_back({f, "not included by nginx.conf"});
    std::sort(plan.skipped.begin(), plan.skipped.end(),
              [](const skipped_file& a, const skipped_file& b) { return a.path < b.path; });
    return cfg;
  }
  if (plan.files.empty()) {
    throw input_error({dir, 0, 0},
                      "no nginx configuration in this directory: no nginx.conf, no "
                      "*.conf and no file in a sites-* folder (" +
                          std::to_string(plan.skipped.size()) + " entries skipped)");
  }
  auto disk = make_disk_source();
  std::vector<list<directive>> roots;
  std::vector<std::uint32_t> indices;
  config cfg = load_each(plan.files, *disk, o, roots, indices);
  // A site file included by another is read where it is included, not on its own as well.
  std::map<std::uint32_t, std::uint32_t> included_by;  // file index -> including file
  for (std::uint32_t i = 0; i < cfg.files.size(); ++i)
    for (const auto& [d, targets] : cfg.files[i].includes)
      for (std::uint32_t t : targets)
        if (t != i) included_by.emplace(t, i);
  std::vector<directive> top, http, stream, mail;
  std::vector<std::string> kept;
  for (std::size_t k = 0; k < plan.files.size(); ++k) {
    if (auto it = included_by.find(indices[k]); it != included_by.end()) {
      plan.skipped.push_back(
          {plan.files[k], "included by " + cfg.files[it->second].path + " (read there)"});
      continue;
    }
    kept.push_back(plan.files[k]);
    if (roots[k].empty()) continue;
    const shape s = context_of(cfg, roots[k], plan.files[k], options);
    list<directive> run = roots[k];
    std::vector<directive>* into = &http;
    switch (s.context) {
      case implied_context::none:
        into = &top;
        break;
      case implied_context::stream:
        into = &stream;
        break;
      case implied_context::mail:
        into = &mail;
        break;
      case implied_context::http_server:
      case implied_context::http_location: {
        // Its own implied server: the block records are made here, the http one below.
        list<directive> wrapped = wrap(cfg, run, s.context);
        cfg.implied_blocks.pop_back();  // the per-file http block is not used
        run = wrapped.front().block;
        break;
      }
      case implied_context::http:
      case implied_context::http_directory:
        break;
    }
    into->insert(into->end(), run.begin(), run.end());
  }
  plan.files = kept;
  std::sort(plan.skipped.begin(), plan.skipped.end(),
            [](const skipped_file& a, const skipped_file& b) { return a.path < b.path; });
  const std::size_t own = top.size();  // the main-context files' directives come first
  if (!http.empty())
    top.push_back(
        *make_block(*cfg.store, "http", cfg.store->copy(http.data(), http.size()), http.front()));
  if (!stream.empty())
    top.push_back(*make_block(*cfg.store, "stream", cfg.store->copy(stream.data(), stream.size()),
                              stream.front()));
  if (!mail.empty())
    top.push_back(
        *make_block(*cfg.store, "mail", cfg.store->copy(mail.data(), mail.size()), mail.front()));
  cfg.root = cfg.store->copy(top.data(), top.size());
  for (std::size_t i = own; i < cfg.root.size(); ++i) cfg.implied_blocks.push_back(&cfg.root[i]);
  cfg.implied = implied_context::http_directory;
  cfg.implied_reason = std::to_string(plan.files.size()) + " site files of " + dir;
  return cfg;
}

}  // namespace ngxtls::config
