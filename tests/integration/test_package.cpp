// The Debian package built with debhelper (debian/, scripts/build-deb.sh packaging the tree CI
// built): lintian finds no error, it installs with dpkg -i, lints the bundled demo, holds the
// man page and completions, its systemd unit's command serves as a non-root user and stops on
// SIGTERM with exit 0, and dpkg --purge removes it all. Then the container image made from that
// package (scripts/build-image.sh: mmdebstrap, podman) lints and checks the demo inside.
// It installs into the system, so it runs only as root in CI (CI set in the environment).
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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

// The image scripts/build-image.sh makes from the package: lint and check --sandbox on the
// bundled demo inside it, as its non-root user. Where podman cannot run a container here, the
// same root file system in a chroot, and the podman failure is printed.
void check_image(const fs::path& deb, const fs::path& out) {
  if (run({"sh", "-c", "command -v mmdebstrap"}, "", 10).exit_code != 0) {
    MESSAGE("mmdebstrap is not installed: no image built");
    return;
  }
  auto image = run({"bash", (source_dir() / "scripts/build-image.sh").string(), deb.string(),
                    out.string(), "ngxtls-test:local"},
                   "", 900);
  REQUIRE_MESSAGE(image.exit_code == 0, (image.out + image.err));
  const std::string demo = (source_dir() / "fixtures/demo").string();
  const std::vector<std::string> lint = {"lint",   "demo/nginx.conf", "--nginx-version",
                                         "1.22.1", "--fail-on",       "never"};
  const std::vector<std::string> check = {"check", "demo/nginx.conf", "--sandbox", "--fail-on",
                                          "never"};
  auto in_podman = [&](const std::vector<std::string>& args) {
    // runc, and no default ulimits: this machine's root lacks CAP_SYS_RESOURCE (crun's
    // setrlimit fails) and its cgroups are hybrid (crun refuses them).
    std::vector<std::string> argv = {"env",
                                     "CONTAINERS_CONF=" + (out / "containers.conf").string(),
                                     "podman",
                                     "--runtime",
                                     "runc",
                                     "run",
                                     "--rm",
                                     "--network=none",
                                     "-v",
                                     demo + ":/work/demo:ro",
                                     "ngxtls-test:local"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, "", 600);
  };
  bool podman_ran = false;
  if (run({"sh", "-c", "command -v podman && command -v runc"}, "", 10).exit_code == 0) {
    std::ofstream(out / "containers.conf") << "[containers]\ndefault_ulimits = []\n";
    auto probe = in_podman({"--version"});
    if (probe.exit_code == 0) {
      podman_ran = true;
      CHECK(probe.out.find("ngxtls ") == 0);
      auto l = in_podman(lint);
      CHECK_MESSAGE(l.exit_code == 0, l.err);
      CHECK(l.out.find("[tls13-resumption-disabled]") != std::string::npos);
      auto c = in_podman(check);
      CHECK_MESSAGE(c.exit_code == 0, (c.out + c.err));
      CHECK(c.out.find(" confirmed, ") != std::string::npos);
      auto who = run({"podman", "image", "inspect", "--format",
                      "{{.Config.User}} {{.Config.Entrypoint}}", "ngxtls-test:local"},
                     "", 60);
      CHECK(who.out.find("ngxtls [ngxtls]") == 0);
    } else {
      MESSAGE("podman could not run the image here: "
              << probe.err << "; testing its root file system in a chroot");
    }
    run({"podman", "rmi", "-f", "ngxtls-test:local"}, "", 120);
  }
  if (podman_ran) return;
  // The chroot: the image's files, its user, the demo copied in, /proc and /dev for nginx.
  const fs::path root = out / "rootfs";
  fs::create_directories(root);
  REQUIRE(
      run({"tar", "-C", root.string(), "-xf", (out / "rootfs.tar").string()}, "", 300).exit_code ==
      0);
  REQUIRE(run({"cp", "-r", demo, (root / "work/demo").string()}, "", 60).exit_code == 0);
  auto in_chroot = [&](const std::vector<std::string>& args) {
    std::string cmd =
        "mount -t proc proc \"$0/proc\" && mount --rbind /dev \"$0/dev\" && "
        "cd \"$0/work\" && exec chroot --userspec=10001:10001 \"$0\" sh -c 'cd /work && exec "
        "ngxtls";
    for (const auto& a : args) cmd += " " + a;
    cmd += "'";
    return run({"unshare", "--mount", "--propagation", "private", "sh", "-c", cmd, root.string()},
               "", 600);
  };
  auto l = in_chroot(lint);
  CHECK_MESSAGE(l.exit_code == 0, l.err);
  CHECK(l.out.find("[tls13-resumption-disabled]") != std::string::npos);
  auto c = in_chroot(check);
  CHECK_MESSAGE(c.exit_code == 0, (c.out + c.err));
  CHECK(c.out.find(" confirmed, ") != std::string::npos);
}

}  // namespace

TEST_CASE(
    "the debhelper .deb passes lintian, installs, runs, serves, purges, and its image runs the "
    "demo") {
  if (::geteuid() != 0 || std::getenv("CI") == nullptr)
    return skip_test("installs a package into the system: only as root in CI (CI=1)");
  if (run({"dpkg", "-s", "ngxtls"}, "", 30).exit_code == 0)
    return skip_test("a package named ngxtls is already installed; not replacing it");
  if (port_accepts(10924)) return skip_test("port 10924 (the unit's default) is in use");
  const fs::path build = fs::path(ngxtls_binary()).parent_path();
  temp_dir out;
  auto pack = run({"bash", (source_dir() / "scripts/build-deb.sh").string(), out.path().string(),
                   build.string()},
                  "", 900);
  REQUIRE_MESSAGE(pack.exit_code == 0, (pack.out + pack.err));
  fs::path deb;
  for (const auto& e : fs::directory_iterator(out.path()))
    if (e.path().extension() == ".deb" && e.path().filename().string().rfind("ngxtls_", 0) == 0)
      deb = e.path();
  REQUIRE_FALSE(deb.empty());
  // The package's metadata as dpkg reads it.
  const std::string control = run({"dpkg-deb", "-f", deb.string()}, "", 30).out;
  CHECK(control.find("\nRecommends: nginx\n") != std::string::npos);
  CHECK(control.find("\nDepends: ") != std::string::npos);
  const std::string contents = run({"dpkg-deb", "-c", deb.string()}, "", 30).out;
  for (const char* f :
       {"./usr/share/man/man1/ngxtls.1.gz", "./usr/share/bash-completion/completions/ngxtls",
        "./usr/share/zsh/vendor-completions/_ngxtls",
        "./usr/share/fish/vendor_completions.d/ngxtls.fish",
        "./lib/systemd/system/ngxtls-serve.service", "./usr/share/doc/ngxtls/copyright",
        "./usr/share/doc/ngxtls/changelog.gz"}) {
    CAPTURE(f);
    CHECK(contents.find(f) != std::string::npos);
  }
  // lintian: no error (the warnings left are in docs/packaging.md with why).
  if (run({"sh", "-c", "command -v lintian"}, "", 10).exit_code == 0) {
    auto lint =
        run({"lintian", "--fail-on", "error", "--tag-display-limit", "0", deb.string()}, "", 600);
    INFO(lint.out << lint.err);
    CHECK(lint.exit_code == 0);
    CHECK(lint.out.find("\nE: ") == std::string::npos);
    CHECK(lint.out.rfind("E: ", 0) != 0);
  } else {
    MESSAGE("lintian is not installed: not run");
  }

  auto install = run({"dpkg", "-i", deb.string()}, "", 300);
  REQUIRE_MESSAGE(install.exit_code == 0, (install.out + install.err));
  struct purge_at_end {
    bool done = false;
    ~purge_at_end() {
      if (!done) run({"dpkg", "--purge", "ngxtls"}, "", 300);
    }
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
  // The installed binary on the bundled demo: findings, and no error exit.
  auto demo = run({bin_path, "lint", (source_dir() / "fixtures/demo/nginx.conf").string(),
                   "--nginx-version", "1.22.1", "--fail-on", "never"},
                  "", 120);
  CHECK_MESSAGE(demo.exit_code == 0, demo.err);
  CHECK(demo.out.find("[tls13-resumption-disabled]") != std::string::npos);

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

  // Purged: no binary, no unit, no config left.
  auto gone = run({"dpkg", "--purge", "ngxtls"}, "", 300);
  CHECK_MESSAGE(gone.exit_code == 0, gone.err);
  purge.done = true;
  CHECK_FALSE(fs::exists(bin_path));
  CHECK_FALSE(fs::exists(unit_path));
  CHECK_FALSE(fs::exists(conf_path));
  CHECK(run({"dpkg", "-s", "ngxtls"}, "", 30).exit_code != 0);

  check_image(deb, out.path());
}
