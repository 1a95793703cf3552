#include "cli/common.hpp"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "base/error.hpp"
#include "check/sandbox_process.hpp"
#include "tls/ciphers.hpp"

namespace ngxtls::cli {

config::config load_input(const std::string& path, const config::load_options& opts) {
  if (path == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    // An empty stdin is most often a failed `nginx -T`: never report it as a clean config.
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
      throw input_error({"<stdin>", 0, 0}, "empty input: nothing to lint (did `nginx -T` fail?)");
    if (config::looks_like_dump(text)) return config::load_dump(text, "<stdin>", opts);
    // A plain config on stdin: includes still come from disk, relative to the prefix.
    config::load_options o = opts;
    if (!o.conf_prefix) {
      char buf[4096];
      o.conf_prefix = getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
    }
    auto disk = config::make_disk_source();
    return config::load_buffer(std::move(text), "<stdin>", *disk, o);
  }
  // load_file reads a saved `nginx -T` dump as a dump, and never opens FIFOs or devices
  // in a way that blocks.
  return config::load_file(path, opts);
}

namespace {
std::optional<model::version> parse_flag(const std::string& v, const char* what) {
  if (v.empty()) return std::nullopt;
  auto p = model::version::parse(v);
  if (!p) throw usage_error(std::string("cannot read ") + what + " version \"" + v + "\"");
  return p;
}

// The Debian package version of the nginx `binary` runs, when dpkg owns the file: distributions
// backport fixes (CVE-2025-23419 into Debian 12's 1.22.1-9+deb12u1) under the old upstream
// version. Two dpkg-query runs of at most 5 s each, local only; empty on any failure.
std::string package_version_of(const std::string& binary) {
  try {
    const std::string path = check::find_executable(binary);
    if (path.empty() || check::find_executable("dpkg-query").empty()) return {};
    std::vector<std::string> candidates{path};
    std::error_code ec;
    const auto canonical = std::filesystem::canonical(path, ec);
    if (!ec && canonical.string() != path) candidates.push_back(canonical.string());
    for (const auto& p : candidates) {
      auto owner = check::run_command({"dpkg-query", "-S", p}, 5000);
      if (owner.exit_code != 0) continue;
      const std::string pkg = model::package_owning(owner.out, p);
      if (pkg.empty()) continue;
      auto ver = check::run_command({"dpkg-query", "-W", "-f=${Version}", pkg}, 5000);
      if (ver.exit_code != 0 || ver.out.empty() || ver.out.size() > 100) return {};
      for (char c : ver.out)
        if (!std::isalnum(static_cast<unsigned char>(c)) &&
            std::string_view(".+-~:").find(c) == std::string_view::npos)
          return {};
      return ver.out;
    }
  } catch (const std::exception&) {
  }
  return {};
}

std::string run_nginx_v(const std::string& binary) {
  // nginx prints -V to stderr.
  try {
    auto r = check::run_command({binary, "-V"}, 10000);
    return r.exit_code == 0 ? r.err + r.out : std::string();
  } catch (const std::exception&) {
    return {};
  }
}
}  // namespace

model::assumed_versions choose_versions(const std::string& nginx_flag, const std::string& openssl_flag,
                                        const std::optional<engine::project_config>& pc,
                                        const std::string& nginx_binary) {
  model::assumed_versions v;
  std::optional<model::nginx_v_info> detected;
  auto detect = [&]() -> const model::nginx_v_info& {
    if (!detected) detected = model::parse_nginx_v(run_nginx_v(nginx_binary));
    return *detected;
  };
  if (auto f = parse_flag(nginx_flag, "nginx")) {
    v.nginx = *f;
    v.nginx_source = "--nginx-version";
    v.nginx_pinned = true;
  } else if (pc && pc->nginx_version) {
    v.nginx = *parse_flag(*pc->nginx_version, "nginx");
    v.nginx_source = pc->path;
    v.nginx_pinned = true;
  } else if (detect().nginx) {
    v.nginx = *detect().nginx;
    v.nginx_source = "nginx -V";
    v.nginx_pinned = true;
    v.nginx_package = package_version_of(nginx_binary);
  } else {
    v.nginx = model::newest_known_nginx;
    v.nginx_source = "newest known; pass --nginx-version";
  }
  if (auto f = parse_flag(openssl_flag, "OpenSSL")) {
    v.openssl = *f;
    v.openssl_source = "--openssl-version";
  } else if (pc && pc->openssl_version) {
    v.openssl = *parse_flag(*pc->openssl_version, "OpenSSL");
    v.openssl_source = pc->path;
  } else if (nginx_flag.empty() && !(pc && pc->nginx_version) && detect().openssl) {
    v.openssl = *detect().openssl;
    v.openssl_source = "nginx -V";
  } else {
    v.openssl = model::version::parse(tls::openssl_version()).value_or(model::version{3, 0, 0});
    v.openssl_source = "linked libssl";
  }
  return v;
}

void write_output(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path.empty() || path == "-") {
    write(std::cout);
    std::cout.flush();
    return;
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw usage_error("cannot write " + path + ": " + std::strerror(errno));
  write(f);
  f.flush();
  if (!f) throw usage_error("cannot write " + path);
}

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw usage_error("cannot write " + path + ": " + std::strerror(errno));
  f << text;
  f.flush();
  if (!f) throw usage_error("cannot write " + path);
}

bool is_tty(int fd) { return isatty(fd) == 1; }

}  // namespace ngxtls::cli
