#pragma once
// Inputs as operators review them: a site file (conf.d/app.conf, sites-enabled/app), a
// snippet of server or location directives, or a directory (an /etc/nginx tree, or a folder
// of site files). Each is read inside the block nginx reads it in, without changing a byte of
// it: the blocks around it are added to the tree only (config::implied_blocks), so every
// location still names the operator's file.

#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"
#include "config/tree.hpp"

namespace ngxtls::config {

/// Decides, from the top level of `cfg` (a file read on its own, not a dump), the block nginx
/// would read it in, and wraps cfg.root in it (cfg.implied, implied_reason, implied_blocks):
/// - a main-context directive (events, http, stream, mail, load_module, worker_processes, ...)
///   at the top level: a main nginx.conf, left as it is;
/// - `listen`, `server_name`, `location`, `if`, `return`, `rewrite`, `set` at the top level:
///   a server snippet, inside a server of an implied http block;
/// - `proxy_pass` (and the other *_pass, `alias`, `internal`) with none of the above: a
///   location snippet;
/// - `server` blocks whose every server proxies with `proxy_pass HOST:PORT` directly in the
///   server (which nginx allows only in stream: in http it says `"proxy_pass" directive is not
///   allowed here`) and none holding an http-only directive (location, root, add_header, ...):
///   a stream site file;
/// - a directive of the mail modules that http and stream do not take (auth_http,
///   smtp_capabilities, imap_capabilities, pop3_capabilities, starttls, protocol, xclient,
///   proxy_pass_error_message, ...) at the top level: the body of a `mail { }` block;
/// - anything else (server blocks, ssl_*, upstream, map, ...): a site file inside http, as
///   Debian's and nginx.org's nginx.conf include conf.d/*.conf and sites-enabled/*.
/// An empty tree is left as it is.
/// options.site_context (--context) forces the block; else an `include` in an nginx.conf in the
/// file's folder or its parent that names the file decides (its http, stream or mail block:
/// conf.d/, stream.d/ or conf.mail.d/ included from there), else the shape above. The reason
/// (config::implied_reason) says which.
void imply_context(config& cfg, const load_options& options = {});

/// How a report names the block an input was read in: "inside http { }, as nginx reads a
/// file from conf.d/ or sites-enabled/", ...; "" for implied_context::none.
std::string describe(implied_context c);

/// One word for the block: "main", "http", "stream", "server", "location", "directory".
std::string context_name(implied_context c);

/// A file `ngxtls lint DIR` did not read, and why.
struct skipped_file {
  std::string path;
  std::string reason;  ///< "not a usual nginx file name", "included by sites-enabled/app", ...
};

/// What `ngxtls lint DIR` reads.
struct directory_plan {
  /// DIR/nginx.conf exists: an /etc/nginx tree, read from its nginx.conf (and what that
  /// includes); `files` holds that one path.
  bool nginx_conf = false;
  std::vector<std::string> files;     ///< read in this order (sorted bytewise by path)
  std::vector<skipped_file> skipped;  ///< files under DIR not read, sorted by path
  std::string conf_prefix;            ///< what relative paths in the files resolve against
};

/// Lists the files under `dir` that `ngxtls lint DIR` reads: DIR/nginx.conf when it exists;
/// else, recursively and sorted, every regular file named *.conf and every file in a
/// directory named sites-* (sites-available only when there is no sites-enabled beside it:
/// nginx reads the enabled ones). Symbolic links to files are followed, each file read once;
/// hidden files and directories are passed over. Bounded: at most options.max_included_files
/// files and max_glob_entries directory entries are looked at, and the files' sizes together
/// at most max_directory_bytes (input_error naming the limit). Throws input_error when `dir`
/// cannot be read.
directory_plan plan_directory(const std::string& dir, const load_options& options);

/// Total bytes of the files `ngxtls lint DIR` reads from a folder of site files
/// (docs/limits.md).
inline constexpr std::size_t max_directory_bytes = std::size_t{256} << 20;

/// Loads `dir` as planned by plan_directory(): the nginx.conf tree as load_file() does, or
/// every site file as the top level of one shared http block (servers that share a socket
/// across files are then modelled as nginx groups them). A site file that another one
/// includes is read where it is included only (added to `plan.skipped`); a file of server or
/// location directives that no site file includes goes in an implied server of its own.
/// Throws input_error as load() does.
config load_directory(const std::string& dir, const load_options& options, directory_plan& plan);

/// Loads one input file as `ngxtls lint FILE` reads it: load_file(), then imply_context()
/// unless it is a dump. A file in a folder named conf.d or sites-* resolves relative paths
/// against that folder's parent (where nginx.conf sits) unless options.conf_prefix is set.
config load_site_file(const std::string& path, const load_options& options);

/// Loads whatever `path` names (a directory, or a file) as load_directory() or
/// load_site_file() do; a directory's skipped files go to config::skipped_files.
config load_path(const std::string& path, const load_options& options);

/// True when `path` names a directory (following symbolic links).
bool is_directory(const std::string& path);

}  // namespace ngxtls::config
