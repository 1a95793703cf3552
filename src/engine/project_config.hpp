#pragma once
// .ngxtls.toml: rule selection, severity overrides, assumed versions, fleet definitions.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/finding.hpp"

namespace ngxtls::engine {

/// What a .ngxtls.toml says. Every field is optional.
/// ```toml
/// nginx_version = "1.22.1"
/// openssl_version = "3.0.19"
/// select = ["tls13-resumption-disabled"]   # only these rules
/// ignore = ["ticket-key-rotation"]
/// strict_files = false
/// [severity]
/// ocsp-stapling-dead = "error"
/// expiry_days = 30                         # certificate-expiry warns this many days ahead
/// modules = ["lua", "headers-more"]         # third-party modules built in (no load_module line)
/// [fleet]
/// configs = ["hosts/a/nginx.conf", "hosts/b/nginx.conf"]   # relative to this file
/// [load]
/// new_sessions_per_second = 300             # per instance; sizes shared session caches
/// ```
struct project_config {
  std::string path;  ///< the file read
  std::optional<std::string> nginx_version;
  std::optional<std::string> openssl_version;
  std::optional<std::set<std::string>> select;
  std::set<std::string> ignore;
  std::map<std::string, severity> severity_overrides;
  std::vector<std::string> fleet;  ///< resolved against the file's directory
  std::optional<bool> strict_files;
  std::optional<int> expiry_days;                 ///< days ahead to warn about expiry (>= 0)
  std::optional<double> new_sessions_per_second;  ///< [load] new_sessions_per_second (> 0)
  std::set<std::string> modules;                  ///< declared third-party modules
};

/// The nearest .ngxtls.toml in `start_dir` or above, or nullopt.
std::optional<std::string> find_project_config(const std::string& start_dir);

/// Reads a .ngxtls.toml. Throws input_error at file:line:col for TOML syntax errors,
/// unknown keys, wrong value types, unknown rule ids and bad severities.
project_config load_project_config(const std::string& path);

}  // namespace ngxtls::engine
