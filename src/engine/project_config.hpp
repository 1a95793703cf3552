#pragma once
// .ngxtls.toml: rule selection, severity overrides, assumed versions, fleet definitions.

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <toml.hpp>
#include <vector>

#include "engine/engine.hpp"
#include "engine/finding.hpp"
#include "model/version.hpp"

namespace ngxtls::engine {

/// The largest .ngxtls.toml read: a real one is a few KiB (a fleet of a thousand hosts is
/// about 40 KiB), and the TOML parser's time grows with the square of an array's length
/// (64 KiB of one array: about 1 s).
inline constexpr std::size_t max_project_config_bytes = std::size_t{64} << 10;

/// The deepest nesting of arrays and inline tables, and the most parts in one dotted key or
/// table header, that a .ngxtls.toml may have: the TOML parser recurses once per level and
/// per part (a[[[[... or a.a.a.... a hundred thousand deep overflowed the stack).
inline constexpr std::size_t max_project_config_nesting = 32;

/// Throws ngxtls::input_error at the place where `text` (a TOML file read from `path`) nests
/// arrays and inline tables, or parts of a dotted key or table header, deeper than
/// max_project_config_nesting: the TOML parser recurses on both, so this runs before it.
/// Every TOML file ngxtls reads (.ngxtls.toml, the `serve` config) goes through it.
void check_toml_nesting(const std::string& path, const std::string& text);

/// Throws input_error at `at`'s line:col in `file`: how every TOML file the tool reads
/// (.ngxtls.toml, serve's config) reports a value it cannot take.
[[noreturn]] void toml_fail(const std::string& file, const toml::value& at, const std::string& msg);
/// `v` as a string, or toml_fail naming `key`.
std::string toml_string(const std::string& file, const toml::value& v, const std::string& key);

/// What a .ngxtls.toml says. Every field is optional.
/// ```toml
/// nginx_version = "1.22.1"
/// openssl_version = "3.0.19"
/// select = ["tls13-resumption-disabled"]   # only these rules
/// ignore = ["ticket-key-rotation"]
/// strict_files = false
/// expiry_days = 30                         # certificate-expiry warns this many days ahead
/// modules = ["lua", "headers-more"]         # third-party modules built in (no load_module line)
/// [severity]
/// ocsp-stapling-dead = "error"
/// [fleet]
/// configs = ["hosts/a/nginx.conf", "hosts/b/nginx.conf"]   # relative to this file
/// [load]
/// new_sessions_per_second = 300             # per instance; sizes shared session caches
/// ```
struct project_config {
  std::string path;                               ///< the file read
  std::optional<model::version> nginx_version;    ///< read by model::version::parse_given
  std::optional<model::version> openssl_version;  ///< read by model::version::parse_given
  std::optional<std::set<std::string>> select;
  std::set<std::string> ignore;
  std::map<std::string, severity> severity_overrides;
  std::vector<std::string> fleet;  ///< resolved against the file's directory
  std::optional<bool> strict_files;
  std::optional<int> expiry_days;                 ///< days ahead to warn about expiry (>= 0)
  std::optional<double> new_sessions_per_second;  ///< [load] new_sessions_per_second (> 0)
  std::set<std::string> modules;                  ///< declared third-party modules
};

/// The outcome of looking for a .ngxtls.toml.
struct project_config_search {
  std::optional<std::string> path;  ///< the file to read; nullopt when none is found or trusted
  /// Why the nearest file found was not used (owned by another user, writable by others, not a
  /// regular file: a FIFO, a directory, a dangling link), for
  /// a warning; empty when it was used or none was found.
  std::string ignored;
};

/// Looks for .ngxtls.toml in `start_dir`, then its parents, up to and including the first
/// directory that is a repository root (holds `.git`) or the user's home (`home_dir`, default
/// $HOME or the password entry's), or `/`. The nearest file is used only when it is owned by
/// the effective user or root and neither it nor its directory (unless sticky) is writable by
/// others: a file another user planted in a shared parent (/tmp/x/.ngxtls.toml) could select
/// and ignore rules and silence every finding. An untrusted file ends the search (a file
/// further up is not what the user expected either) and is named in `ignored`.
project_config_search find_project_config(const std::string& start_dir,
                                          std::optional<std::string> home_dir = std::nullopt);

/// Reads a .ngxtls.toml. Throws input_error at file:line:col for TOML syntax errors,
/// unknown keys, wrong value types, rule ids not in `catalog` and bad severities.
project_config load_project_config(const std::string& path, const rule_catalog& catalog);

}  // namespace ngxtls::engine
