#include "sandbox/nginx_build.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <tuple>

#include "base/error.hpp"
#include "sandbox/sandbox_process.hpp"

namespace fs = std::filesystem;

namespace ngxtls::sandbox {

bool nginx_build::stream_is_dynamic() const {
  return configure.find(" --with-stream=dynamic ") != std::string::npos;
}

std::string nginx_build::stream_module_file() const {
  return modules_path + "/ngx_stream_module.so";
}

bool nginx_build::has_http_module(std::string_view name) const {
  return configure.find(" --without-http_" + std::string(name) + "_module ") == std::string::npos;
}

bool nginx_build::has_quic() const {
  static const std::regex v(R"(nginx/(\d+)\.(\d+)\.(\d+))");
  std::smatch mv;
  if (!std::regex_search(version_line, mv, v)) return true;
  return std::make_tuple(std::stoi(mv[1]), std::stoi(mv[2]), 0) >= std::make_tuple(1, 25, 0);
}

bool nginx_build::serves_quic() const {
  return has_quic() && configure.find(" --with-http_v3_module") != std::string::npos;
}

nginx_build read_nginx_build(const std::string& binary) {
  nginx_build b;
  b.binary = binary;
  auto v = run_command({binary, "-V"}, 10000);
  std::string text = v.err.empty() ? v.out : v.err;
  if (v.exit_code != 0 || text.find("nginx") == std::string::npos)
    throw target_error("sandbox: `" + binary + " -V` failed (exit " + std::to_string(v.exit_code) +
                       "): is it nginx?");
  b.version_line = text.substr(0, text.find('\n'));
  if (auto at = text.find("configure arguments:"); at != std::string::npos)
    b.configure = text.substr(at) + " ";
  std::replace(b.configure.begin(), b.configure.end(), '\n', ' ');
  auto configured = [&](const std::string& opt, const std::string& fallback) {
    auto at = b.configure.find(" " + opt + "=");
    if (at == std::string::npos) return fallback;
    at += opt.size() + 2;
    return b.configure.substr(at, b.configure.find_first_of(" \n", at) - at);
  };
  b.prefix = configured("--prefix", "/usr/local/nginx");
  b.modules_path = configured("--modules-path", b.prefix + "/modules");
  return b;
}

bool trusted_module(const std::string& path) {
  auto ok = [](const std::string& p, bool dir) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) &&
           (st.st_uid == 0 || st.st_uid == ::getuid()) && !(st.st_mode & 022);
  };
  return ok(path, false) && ok(fs::path(path).parent_path().string(), true);
}

}  // namespace ngxtls::sandbox
