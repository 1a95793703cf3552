// The Debian package built by CPack: installed with dpkg -i, `ngxtls --version` runs, and the
// systemd unit's command serves as a non-root user and stops on SIGTERM with exit 0.
// It installs into the system, so it runs only as root in CI (CI set in the environment).
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "serve_util.hpp"
#include "support/nginx_instance.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using namespace ngxtls::test;

namespace {

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

TEST_CASE(
    "cpack's .deb installs with dpkg -i and then ngxtls --version and the unit's command run") {
  if (::geteuid() != 0 || std::getenv("CI") == nullptr)
    return skip_test("installs a package into the system: only as root in CI (CI=1)");
  if (run({"dpkg", "-s", "ngxtls"}, "", 30).exit_code == 0)
    return skip_test("a package named ngxtls is already installed; not replacing it");
  if (port_accepts(10924)) return skip_test("port 10924 (the unit's default) is in use");
  const fs::path build = fs::path(ngxtls_binary()).parent_path();
  temp_dir out;
  auto pack = run({"cpack", "--config", (build / "CPackConfig.cmake").string(), "-G", "DEB", "-B",
                   out.path().string()},
                  "", 600);
  REQUIRE_MESSAGE(pack.exit_code == 0, (pack.out + pack.err));
  fs::path deb;
  for (const auto& e : fs::directory_iterator(out.path()))
    if (e.path().extension() == ".deb") deb = e.path();
  REQUIRE_FALSE(deb.empty());

  auto install = run({"dpkg", "-i", deb.string()}, "", 300);
  REQUIRE_MESSAGE(install.exit_code == 0, (install.out + install.err));
  struct purge_at_end {
    ~purge_at_end() { run({"dpkg", "--purge", "ngxtls"}, "", 300); }
  } purge;
  auto files = run({"dpkg", "-L", "ngxtls"}, "", 30).out;
  std::string unit_path, bin_path, man_path, conf_path;
  std::istringstream in(files);
  for (std::string f; std::getline(in, f);) {
    if (f.size() > 21 && f.rfind("/ngxtls-serve.service") == f.size() - 21) unit_path = f;
    if (f.size() > 11 && f.rfind("/bin/ngxtls") == f.size() - 11) bin_path = f;
    if (f.find("/man1/ngxtls.1") != std::string::npos) man_path = f;
    if (f.find("/ngxtls/serve.toml") != std::string::npos && f.find("/doc/") == std::string::npos)
      conf_path = f;
  }
  REQUIRE_FALSE(unit_path.empty());
  REQUIRE_FALSE(bin_path.empty());
  CHECK_FALSE(man_path.empty());
  CHECK_FALSE(conf_path.empty());
  auto version = run({bin_path, "--version"}, "", 30);
  CHECK(version.exit_code == 0);
  CHECK(version.out.find("ngxtls ") == 0);

  const std::string unit = read_file(unit_path);
  CHECK(unit.find("DynamicUser=yes") != std::string::npos);
  CHECK(unit.find("NoNewPrivileges=yes") != std::string::npos);
  CHECK(unit.find("ProtectSystem=strict") != std::string::npos);
  // systemd's own reading of the unit: no unknown key or section, no bad value.
  if (run({"sh", "-c", "command -v systemd-analyze"}, "", 10).exit_code == 0) {
    auto verify = run({"systemd-analyze", "verify", unit_path}, "", 60);
    INFO(verify.err);
    for (const char* bad : {"Unknown key", "Unknown section", "Failed to parse", "Invalid"})
      CHECK(verify.err.find(bad) == std::string::npos);
  }
  std::string exec;
  std::istringstream lines(unit);
  for (std::string l; std::getline(lines, l);)
    if (l.rfind("ExecStart=", 0) == 0) exec = l.substr(10);
  auto argv = words(exec);
  REQUIRE(argv.size() >= 2);
  CHECK(argv[0] == bin_path);
  CHECK(exec.find(conf_path) != std::string::npos);
  // As the unit runs it: not root (setpriv drops to nobody), the packaged config.
  std::vector<std::string> as_nobody{"setpriv", "--reuid=nobody", "--regid=nogroup",
                                     "--clear-groups", "--"};
  as_nobody.insert(as_nobody.end(), argv.begin(), argv.end());
  server_process srv(as_nobody, (out.path() / "serve.log").string(), 10924);
  httplib::Client c("127.0.0.1", 10924);
  auto healthy = c.Get("/-/healthy");
  REQUIRE(healthy);
  CHECK(healthy->status == 200);
  // The example allow list names example.com only: a loopback target is refused, not probed.
  auto refused = c.Get("/probe?target=127.0.0.1:22");
  REQUIRE(refused);
  CHECK(refused->status == 403);
  ::kill(srv.pid(), SIGTERM);
  CHECK(srv.wait_exit(10000) == 0);
}
