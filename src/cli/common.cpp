#include "cli/common.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "base/error.hpp"
#include "tls/ciphers.hpp"

namespace ngxtls::cli {

config::config load_input(const std::string& path, const config::load_options& opts) {
  if (path == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (config::looks_like_dump(text)) return config::load_dump(text, "<stdin>", opts);
    // A plain config on stdin: includes still come from disk, relative to the prefix.
    class stdin_source : public config::file_source {
     public:
      stdin_source(std::string text) : text_(std::move(text)), disk_(config::make_disk_source()) {}
      std::string read(const std::string& p, const source_location& from) override {
        return p == "<stdin>" ? text_ : disk_->read(p, from);
      }
      std::vector<std::string> glob(const std::string& pattern) override { return disk_->glob(pattern); }

     private:
      std::string text_;
      std::unique_ptr<config::file_source> disk_;
    } source(std::move(text));
    config::load_options o = opts;
    if (!o.conf_prefix) {
      char buf[4096];
      o.conf_prefix = getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
    }
    return config::load("<stdin>", source, o);
  }
  // A saved `nginx -T` dump is read as a dump; everything else as a config tree.
  {
    std::ifstream f(path, std::ios::binary);
    std::array<char, 4096> head{};
    if (f) {
      f.read(head.data(), head.size());
      std::string_view start(head.data(), static_cast<std::size_t>(f.gcount()));
      if (config::looks_like_dump(start)) {
        std::ostringstream all;
        f.seekg(0);
        all << f.rdbuf();
        return config::load_dump(all.str(), path, opts);
      }
    }
  }
  return config::load_file(path, opts);
}

namespace {
std::optional<model::version> parse_flag(const std::string& v, const char* what) {
  if (v.empty()) return std::nullopt;
  auto p = model::version::parse(v);
  if (!p) throw usage_error(std::string("cannot read ") + what + " version \"" + v + "\"");
  return p;
}

std::string run_nginx_v() {
  // nginx prints -V to stderr.
  FILE* p = popen("nginx -V 2>&1", "r");
  if (!p) return {};
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0 && out.size() < 1 << 16) out.append(buf, n);
  int rc = pclose(p);
  return rc == 0 ? out : std::string();
}
}  // namespace

model::assumed_versions choose_versions(const std::string& nginx_flag, const std::string& openssl_flag,
                                        const std::optional<engine::project_config>& pc) {
  model::assumed_versions v;
  std::optional<model::nginx_v_info> detected;
  auto detect = [&]() -> const model::nginx_v_info& {
    if (!detected) detected = model::parse_nginx_v(run_nginx_v());
    return *detected;
  };
  if (auto f = parse_flag(nginx_flag, "nginx")) {
    v.nginx = *f;
    v.nginx_source = "--nginx-version";
  } else if (pc && pc->nginx_version) {
    v.nginx = *parse_flag(*pc->nginx_version, "nginx");
    v.nginx_source = pc->path;
  } else if (detect().nginx) {
    v.nginx = *detect().nginx;
    v.nginx_source = "nginx -V";
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

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f) throw usage_error("cannot write " + path);
}

bool is_tty(int fd) { return isatty(fd) == 1; }

}  // namespace ngxtls::cli
