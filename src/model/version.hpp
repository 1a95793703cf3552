#pragma once
// nginx and OpenSSL versions, and which ones a lint assumes.

#include <compare>
#include <optional>
#include <set>
#include <string>

namespace ngxtls::model {

/// A dotted version "major.minor.patch" (missing parts are 0; trailing letters such as the
/// "m" of "1.1.1m" are ignored).
struct version {
  int major = 0, minor = 0, patch = 0;
  auto operator<=>(const version&) const = default;
  /// "1.22.1".
  std::string str() const;
  /// Parses "1.22.1", "3.0", "nginx/1.22.1", "OpenSSL 3.0.19". nullopt when no digits lead.
  static std::optional<version> parse(const std::string& text);
  /// Parses a version a user wrote (--nginx-version, .ngxtls.toml): one to three numbers
  /// separated by dots, then at most letters ("1.22.1", "3.0", "1.1.1w"), nothing else.
  /// nullopt otherwise: "banana2", "-1", "1.x" and "" are mistakes, not versions 2, 1 or 0.
  static std::optional<version> parse_given(const std::string& text);
};

/// The message for a version a user wrote that parse_given() cannot read; `what` is "nginx" or
/// "OpenSSL".
std::string unreadable_version(const std::string& what, const std::string& text);

/// The newest nginx version whose behaviour the rules encode: 1.30.6, Debian sid's package,
/// measured with the older versions of the matrix in tests/integration/test_nginx_versions.cpp.
/// Used when nothing else says which nginx is deployed.
inline constexpr version newest_known_nginx{1, 30, 6};

/// The oldest nginx of that matrix (Debian 12's 1.22.1): when the version is only assumed,
/// the report names the findings that would differ on it.
inline constexpr version oldest_measured_nginx{1, 22, 1};

/// The versions the model resolves defaults for, and why each was chosen
/// (e.g. "--nginx-version", ".ngxtls.toml", "nginx -V", "newest known").
struct assumed_versions {
  version nginx = newest_known_nginx;
  std::string nginx_source = "newest known";
  /// The Debian package version of the nginx whose version was detected ("1.22.1-9+deb12u11",
  /// from dpkg-query); empty when the version was given, or the binary is not from a package.
  /// Distributions backport security fixes without changing the upstream version.
  std::string nginx_package;
  /// True when the nginx version was given (--nginx-version, .ngxtls.toml) or detected
  /// (nginx -V); false when it is only the newest known one.
  bool nginx_pinned = false;
  version openssl{3, 0, 0};
  std::string openssl_source = "linked libssl";
  /// Modules the detected nginx builds as dynamic ones (`nginx -V`: `--with-stream=dynamic`
  /// gives "stream", `--with-mail=dynamic` "mail", as Debian and Ubuntu build them): their
  /// blocks are unknown directives unless a `load_module` loads them. Empty when nginx -V
  /// did not run (the version was given) or shows none.
  std::set<std::string> dynamic_modules;
};

/// Reads `nginx -V` output (stderr) and returns the nginx version and the OpenSSL it runs
/// with ("running with OpenSSL X", else "built with OpenSSL X"). Either may be nullopt.
struct nginx_v_info {
  std::optional<version> nginx;
  std::optional<version> openssl;
  /// Modules configured `--with-NAME=dynamic` among those whose blocks lint checks: "stream",
  /// "mail".
  std::set<std::string> dynamic_modules;
};
nginx_v_info parse_nginx_v(const std::string& text);

/// The package name that owns `path` in `dpkg-query -S` output ("nginx-core: /usr/sbin/nginx",
/// "nginx-core:amd64: /usr/sbin/nginx", diversion lines skipped); empty when none owns it or
/// the name is not a valid Debian package name.
std::string package_owning(const std::string& dpkg_query_s_output, const std::string& path);

}  // namespace ngxtls::model
