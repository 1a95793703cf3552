// The tests' own nginx runs (support/nginx_run: `nginx -t`, `nginx -T`, nginx_instance's start,
// reload and stop, on every nginx of the version matrix) leave the host's nginx state alone:
// as root, nginx creates and chowns its compiled-in temp directories (/var/lib/nginx/body ...)
// to the worker user even under `nginx -t`, and opens its compiled-in pid, lock and log paths.
// Runs alone (RUN_SERIAL in tests/CMakeLists.txt): another test's nginx must not change the
// same directories meanwhile.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "support/host_state.hpp"
#include "support/nginx_instance.hpp"
#include "support/nginx_run.hpp"
#include "support/nginx_versions.hpp"
#include "support/process.hpp"

using namespace ngxtls::test;
namespace fs = std::filesystem;

namespace {

// Puts owner and mode of the paths it saved back, and removes the ones it created.
struct restore_state {
  std::vector<std::tuple<std::string, uid_t, gid_t, mode_t>> saved;
  std::vector<std::string> created;
  ~restore_state() {
    for (const auto& [p, u, g, m] : saved) {
      if (::chown(p.c_str(), u, g) != 0) continue;
      ::chmod(p.c_str(), m);
    }
    std::error_code ec;
    for (auto it = created.rbegin(); it != created.rend(); ++it) fs::remove_all(*it, ec);
  }
};

// An http{} block with no *_temp_path, no pid, no error_log and no access_log: every
// compiled-in default applies.
std::string bare_conf(int port) {
  return "events { worker_connections 64; }\n"
         "http {\n  server { listen 127.0.0.1:" +
         std::to_string(port) + "; location / { return 200 \"ok\\n\"; } }\n}\n";
}

}  // namespace

TEST_CASE("nginx run by the tests changes nothing in /var/lib/nginx, /var/log/nginx or /run") {
  if (::geteuid() != 0) {
    skip_test("needs root: only root's nginx chowns its temp directories");
    return;
  }
  // Root-owned temp directories: an unisolated `nginx -t` chowns them to nobody.
  restore_state restore;
  const std::string lib = "/var/lib/nginx";
  if (!fs::exists(lib)) {
    fs::create_directories(lib);
    restore.created.push_back(lib);
  }
  for (const char* sub : {"body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
    const std::string p = lib + "/" + sub;
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0) {
      restore.saved.push_back({p, st.st_uid, st.st_gid, st.st_mode & 07777});
    } else {
      fs::create_directory(p);
      restore.created.push_back(p);
    }
    REQUIRE(::chown(p.c_str(), 0, 0) == 0);
    REQUIRE(::chmod(p.c_str(), 0700) == 0);
  }

  // The binaries: Debian's, and every installed one of the version matrix.
  std::vector<std::string> binaries = {"/usr/sbin/nginx"};
  for (const auto& v : read_nginx_versions())
    if (v.status == "ok" && v.binary != "/usr/sbin/nginx") binaries.push_back(v.binary);
  std::vector<std::string> roots = {lib, "/var/log/nginx", "/run"};
  for (const auto& b : binaries)
    for (const auto& p : nginx_state_paths(b, "")) {
      // The directory the path is in (the compiled-in prefix for relative defaults).
      const fs::path parent = fs::path(p).parent_path();
      if (fs::exists(parent) && parent != "/" && parent != "/var" && parent != "/var/lib" &&
          parent != "/var/log" && parent != "/run")
        roots.push_back(parent.string());
    }
  CAPTURE(roots.size());
  const auto before = snapshot(roots);

  temp_dir dir;
  const int port = free_port();
  const std::string conf = dir.write("nginx.conf", bare_conf(port)).string();
  fs::create_directory(dir.path() / "logs");  // a prefix-relative logs/error.log, logs/nginx.pid
  const std::string p = dir.path().string() + "/";
  for (const auto& b : binaries) {
    CAPTURE(b);
    // With the test's -p, and without: relative defaults then resolve against --prefix.
    auto t = run_nginx({b, "-t", "-p", p, "-c", conf}, "", 30);
    CHECK_MESSAGE(t.exit_code == 0, t.err);
    auto t2 = run_nginx({b, "-t", "-c", conf}, "", 30);
    CHECK_MESSAGE(t2.exit_code == 0, t2.err);
    // A start, a reload and a stop with the defaults (pid /run/nginx.pid on Debian).
    nginx_options o;
    o.binary = b;
    o.wait_ports = {port};
    nginx_instance n(bare_conf(port), o);
    n.reload();
    n.stop();
  }
  if (fs::exists("/etc/nginx/nginx.conf")) {
    auto dump = run_nginx({"nginx", "-T", "-q"}, "", 30);
    CHECK_MESSAGE(dump.exit_code == 0, dump.err);
  }

  const auto after = snapshot(roots);
  CHECK_MESSAGE(differences(before, after).empty(), differences(before, after));
}

TEST_CASE("the isolation of Debian's nginx covers its compiled-in state directories") {
  if (::geteuid() != 0) {
    skip_test("needs root: without root nothing is mounted");
    return;
  }
  if (!fs::exists("/usr/sbin/nginx") || !fs::is_directory("/var/lib/nginx")) {
    skip_test("Debian's nginx is not installed here");
    return;
  }
  // Worked out from Debian's `nginx -V` (/var/lib/nginx/*, /run/nginx.pid,
  // /var/lock/nginx.lock -> /run/lock, /var/log/nginx/access.log, error log stderr).
  temp_dir dir;
  const nginx_isolation iso({"/usr/sbin/nginx", "-t", "-p", dir.path().string() + "/"});
  const auto d = iso.describe();
  std::string all;
  for (const auto& s : d) all += s + "\n";
  CAPTURE(all);
  CHECK(std::find(d.begin(), d.end(), "fresh /var/lib/nginx") != d.end());
  CHECK(std::find(d.begin(), d.end(), "fresh /var/log/nginx") != d.end());
  CHECK(all.find("shadow /var/log/nginx") == std::string::npos);  // fresh already
  CHECK(all.find("shadow /run ") != std::string::npos);
  CHECK(all.find(" -nginx.pid") != std::string::npos);
  const std::string lock_dir = fs::weakly_canonical("/var/lock").string();  // /run/lock
  CHECK(all.find("shadow " + lock_dir + " -nginx.lock") != std::string::npos);
  // Inside the namespace the temp directory is a tmpfs, seen from a shell run the same way.
  auto r = run({"sh", "-c", "stat -f -c %T /var/lib/nginx; test -e /run/nginx.pid && echo pid"}, "",
               10, [&iso] { return iso.apply(); });
  CHECK(r.out == "tmpfs\n");
}
