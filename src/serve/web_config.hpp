#pragma once
// Prometheus's web configuration file (--web.config.file, the exporter-toolkit format that
// Prometheus and its exporters read): TLS for the exporter's own endpoint and HTTP basic auth
// users with bcrypt password hashes.
// https://prometheus.io/docs/prometheus/latest/configuration/https/

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace ngxtls::serve {

/// The largest web configuration file read, bytes.
inline constexpr std::size_t max_web_config_bytes = std::size_t{64} << 10;

/// What the file says. Keys ngxtls does not implement (client certificates, cipher choice,
/// HTTP headers) are refused when the file is read, never silently ignored.
struct web_config {
  std::string path;                      ///< file it was read from
  std::optional<std::string> cert_file;  ///< tls_server_config.cert_file (absolute)
  std::optional<std::string> key_file;   ///< tls_server_config.key_file (absolute)
  std::string min_version = "TLS12";     ///< tls_server_config.min_version: TLS12 or TLS13
  std::map<std::string, std::string> basic_auth_users;  ///< user -> bcrypt hash
};

/// Reads `path`. Relative file names are taken from the file's directory, as Prometheus does.
/// Throws ngxtls::input_error with file:line:col for YAML errors, unknown or unsupported keys,
/// a cert_file without key_file (or the other way), a hash that is not bcrypt.
web_config load_web_config(const std::string& path);

/// Checks `Authorization: Basic ...` header values against the users' bcrypt hashes. bcrypt
/// costs tens of milliseconds by design: a header that verified once is remembered (at most
/// 64 of them), as Prometheus's exporter-toolkit does. A user name that is not configured is
/// checked against a dummy hash of the same cost as the most expensive configured one, as the
/// exporter-toolkit does, so that an unknown user takes as long as a wrong password and the
/// answer's timing does not tell which user names exist. Thread-safe.
class basic_auth {
 public:
  /// `users`: user -> bcrypt hash; empty means no authentication is asked for.
  explicit basic_auth(std::map<std::string, std::string> users);
  /// True when no users are configured.
  bool disabled() const { return users_.empty(); }
  /// True when `header` (the Authorization header's value) names a user and its password.
  bool check(const std::string& header);
  /// True when `header` verified before and is still remembered: check() would answer true
  /// without a bcrypt computation.
  bool remembered(const std::string& header);
  /// bcrypt computations check() has made (for tests: one per header checked that names a
  /// user, configured or not).
  std::uint64_t hashes_computed() const { return hashes_computed_; }

 private:
  std::map<std::string, std::string> users_;
  std::string dummy_hash_;  // bcrypt of a fixed password, compared for unknown users
  std::mutex mutex_;
  std::set<std::string> verified_;
  std::atomic<std::uint64_t> hashes_computed_{0};
};

}  // namespace ngxtls::serve
