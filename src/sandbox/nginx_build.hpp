#pragma once
// What the sandbox knows about the nginx binary it runs, read once from `nginx -V`: the version,
// the configure arguments and what follows from them (module directory, dynamic stream module,
// http modules built in).

#include <string>
#include <string_view>

namespace ngxtls::sandbox {

/// One nginx build, as `nginx -V` describes it.
struct nginx_build {
  std::string binary;        ///< absolute path of the executable
  std::string version_line;  ///< first line of -V: "nginx version: nginx/1.22.1"
  /// "configure arguments: ..." with newlines as spaces and a space after, so that " --opt "
  /// finds a whole option; empty when -V printed none.
  std::string configure;
  std::string prefix;        ///< --prefix (default /usr/local/nginx): relative load_module paths
  std::string modules_path;  ///< --modules-path (default PREFIX/modules)

  /// ngx_stream_module is built as a dynamic module (--with-stream=dynamic).
  bool stream_is_dynamic() const;
  /// The dynamic stream module's file in the build's module directory.
  std::string stream_module_file() const;
  /// The http module `name` ("proxy", "fastcgi", "uwsgi", "scgi") is built in: configure has no
  /// --without-http_NAME_module.
  bool has_http_module(std::string_view name) const;
  /// The version has `listen ... quic` (nginx 1.25.0 and later); true when the version line
  /// names no version.
  bool has_quic() const;
  /// The build serves QUIC: a version with QUIC, configured --with-http_v3_module.
  bool serves_quic() const;
};

/// Runs `binary -V` (at most 10 s) and reads it. Throws target_error when it fails or does not
/// look like nginx.
nginx_build read_nginx_build(const std::string& binary);

/// A module file nginx may load for the sandbox: a regular file in a directory, both owned by
/// root (or this user) and writable by no one else.
bool trusted_module(const std::string& path);

}  // namespace ngxtls::sandbox
