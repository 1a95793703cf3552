// check --sandbox run as root on an operator's machine: nothing outside its run directory
// changes, nginx runs no code the config names and not as root, reaches no other host, many
// sandboxes run at once, large configs run, and killed runs leave nothing behind. These tests
// run as root (as CI does); the cases that need root say so and are skipped otherwise.

#include <doctest/doctest.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "sandbox/sandbox_process.hpp"
#include "support/fixture_env.hpp"
#include "support/host_state.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using ngxtls::test::differences;
using ngxtls::test::snapshot;
using json = nlohmann::json;

namespace {

// NGXTLS_TEST_BINARY runs these tests against another build (to show they fail on it).
std::string binary() {
  const char* b = std::getenv("NGXTLS_TEST_BINARY");
  return b && *b ? b : test::ngxtls_binary();
}

using env_list = std::vector<std::pair<std::string, std::string>>;

// Starts argv (as `as_uid` when not 0) with extra environment and soft RLIMIT_NOFILE `nofile`
// (when not 0), stdout to `out_path` (or /dev/null), stderr to
// `out_path`.err; returns its pid.
pid_t spawn(const std::vector<std::string>& argv, const env_list& env,
            const std::string& out_path = "", rlim_t nofile = 0, uid_t as_uid = 0) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (as_uid && (::setgroups(0, nullptr) != 0 || ::setgid(as_uid) != 0 || ::setuid(as_uid) != 0))
      _exit(125);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    if (nofile) {
      rlimit rl{};
      ::getrlimit(RLIMIT_NOFILE, &rl);
      rl.rlim_cur = nofile;
      ::setrlimit(RLIMIT_NOFILE, &rl);
    }
    int null = ::open("/dev/null", O_RDWR);
    int out =
        out_path.empty() ? null : ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = out_path.empty()
                  ? null
                  : ::open((out_path + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(null, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    _exit(127);
  }
  return pid;
}

// Exit code (128+signal when killed); SIGKILLs it after `timeout_s`.
int wait_exit(pid_t pid, int timeout_s = 180) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<pid_t> descendants(pid_t root) {
  std::vector<pid_t> out, frontier = {root};
  while (!frontier.empty()) {
    pid_t p = frontier.back();
    frontier.pop_back();
    for (pid_t c : sandbox::child_pids(p)) {
      out.push_back(c);
      frontier.push_back(c);
    }
  }
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Direct children of `p`, from /proc/P/task/P/children (one read: fast enough to catch a
// short-lived `nginx -t`).
std::vector<pid_t> children(pid_t p) {
  std::istringstream in(
      slurp("/proc/" + std::to_string(p) + "/task/" + std::to_string(p) + "/children"));
  std::vector<pid_t> out;
  for (pid_t c; in >> c;) out.push_back(c);
  return out;
}

std::string cmdline(pid_t p) {
  std::string c = slurp("/proc/" + std::to_string(p) + "/cmdline");
  std::replace(c.begin(), c.end(), '\0', ' ');
  return c;
}

// The real uid of a process (first field of Uid: in /proc/PID/status); -1 when gone.
long uid_of(pid_t p) {
  std::istringstream in(slurp("/proc/" + std::to_string(p) + "/status"));
  for (std::string l; std::getline(in, l);)
    if (l.rfind("Uid:", 0) == 0) return std::stol(l.substr(4));
  return -1;
}

// The compiled-in paths of /usr/sbin/nginx's `nginx -V` that nginx writes or creates.
std::vector<std::string> compiled_in_paths() {
  auto v = test::run({"/usr/sbin/nginx", "-V"});
  std::vector<std::string> out;
  std::istringstream in(v.err + " " + v.out);
  for (std::string w; in >> w;)
    for (const char* opt :
         {"--http-client-body-temp-path=", "--http-proxy-temp-path=", "--http-fastcgi-temp-path=",
          "--http-uwsgi-temp-path=", "--http-scgi-temp-path=", "--pid-path=", "--lock-path=",
          "--error-log-path=", "--http-log-path="})
      if (w.rfind(opt, 0) == 0 && w.find('/') != std::string::npos)
        out.push_back(w.substr(std::strlen(opt)));
  return out;
}

json parse_report(const std::string& path) {
  const std::string text = slurp(path);
  INFO("stderr: " << slurp(path + ".err"));
  REQUIRE(!text.empty());
  return json::parse(text);
}

std::string all_notes(const json& doc) {
  std::string s;
  for (const auto& n : doc["sandbox"]["notes"])
    s += n["server"].get<std::string>() + ": " + n["text"].get<std::string>() + "\n";
  return s;
}

// A config whose `nginx -t` rounds each reject one directive (ticket key files of a wrong
// size), so that several rounds run, plus a stream server (the stream module is loaded).
std::string rounds_config(const test::temp_dir& dir, int bad_keys) {
  std::string c = "events {}\nhttp {\n  ssl_protocols TLSv1.2 TLSv1.3;\n";
  for (int i = 0; i < bad_keys; ++i) {
    dir.write("bad" + std::to_string(i) + ".key", std::string(20, 'x'));
    c += "  server { listen " + std::to_string(8443 + i) + " ssl; server_name b" +
         std::to_string(i) + ".test; ssl_session_ticket_key " +
         (dir.path() / ("bad" + std::to_string(i) + ".key")).string() + "; }\n";
  }
  c += "  server { listen 443 ssl; server_name a.test; ssl_session_cache shared:S:1m; }\n}\n";
  c += "stream {\n  server { listen 6443 ssl; proxy_pass 127.0.0.1:9; }\n}\n";
  return dir.write("nginx.conf", c).string();
}

// Restores owner and mode of paths it was told about, and removes those it created.
struct restore_state {
  std::vector<std::tuple<std::string, uid_t, gid_t, mode_t>> saved;
  std::vector<std::string> created;
  ~restore_state() {
    for (const auto& [p, u, g, m] : saved) {
      if (::chown(p.c_str(), u, g) != 0) {
      }
      ::chmod(p.c_str(), m);
    }
    std::error_code ec;
    for (auto it = created.rbegin(); it != created.rend(); ++it) fs::remove_all(*it, ec);
  }
};

}  // namespace

TEST_CASE(
    "sandbox safety: as root, no file outside the run directory changes owner, mode or content") {
  if (::geteuid() != 0) return;  // the chown this guards against only happens as root
  // The state Debian leaves after nginx first ran: temp dirs owned by www-data, mode 0700.
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
    REQUIRE(::chown(p.c_str(), 33, 0) == 0);  // www-data
    REQUIRE(::chmod(p.c_str(), 0700) == 0);
  }
  std::vector<std::string> roots = {lib, "/var/log/nginx", "/run"};
  for (const auto& p : compiled_in_paths()) {
    // The path itself, or the directory it would be created in.
    const fs::path parent = fs::path(p).parent_path();
    if (fs::exists(parent) && parent != "/" && parent != "/var" && parent != "/var/lib" &&
        parent != "/var/log")
      roots.push_back(parent.string());
  }
  CAPTURE(roots.size());
  for (bool netns : {true, false}) {
    CAPTURE(netns);
    test::temp_dir dir;
    const std::string conf = rounds_config(dir, 2);
    const auto before = snapshot(roots);
    env_list env = {{"TMPDIR", dir.path().string()}};
    if (!netns) env.push_back({"NGXTLS_SANDBOX_NO_NETNS", "1"});
    const std::string out = (dir.path() / "report.json").string();
    pid_t pid = spawn({binary(), "check", conf, "--sandbox", "--instances", "2", "--reload", "-n",
                       "2", "--format", "json", "--fail-on", "never"},
                      env, out);
    CHECK(wait_exit(pid) == 0);
    auto doc = parse_report(out);
    // The nginx -t rounds ran: each bad key file was rejected in a round of its own.
    CHECK(doc["sandbox"]["untested"].empty());
    CHECK(all_notes(doc).find("left out to test the rest") != std::string::npos);
    const auto after = snapshot(roots);
    CHECK_MESSAGE(differences(before, after).empty(), differences(before, after));
  }
}

TEST_CASE(
    "sandbox safety: nginx runs as an unused uid, never as root, with no module or Lua the config "
    "names") {
  if (::geteuid() != 0) return;
  test::temp_dir dir;
  // A shared object whose constructor leaves a mark: loading it runs it.
  const fs::path marker = dir.path() / "module-ran";
  const auto src =
      dir.write("evil.c",
                "#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void "
                "ran(void) {"
                " int fd = open(\"" +
                    marker.string() + "\", O_WRONLY | O_CREAT, 0644); if (fd >= 0) close(fd); }\n");
  const std::string so = (dir.path() / "evil.so").string();
  auto cc = test::run({"cc", "-shared", "-fPIC", "-o", so, src.string()});
  REQUIRE_MESSAGE(cc.exit_code == 0, cc.err);
  const std::string conf =
      dir.write("nginx.conf",
                "load_module " + so +
                    ";\nevents {}\nhttp {\n"
                    "  server { listen 443 ssl; server_name a.test;\n"
                    "    ssl_certificate_by_lua_block { ngx.log(ngx.ERR, 'ran') }\n"
                    "    ssl_session_fetch_by_lua_block { ngx.log(ngx.ERR, 'ran') }\n  }\n}\n")
          .string();
  const std::string out = (dir.path() / "report.json").string();
  pid_t pid = spawn({binary(), "check", conf, "--sandbox", "-n", "10000", "--format", "json",
                     "--fail-on", "never"},
                    {{"TMPDIR", dir.path().string()}}, out);
  // While it runs: every nginx (masters and workers) runs as a uid no account has.
  std::set<std::string> account_uids;
  {
    std::ifstream pw("/etc/passwd");
    for (std::string l; std::getline(pw, l);) {
      std::istringstream f(l);
      std::string name, x, uid;
      std::getline(f, name, ':');
      std::getline(f, x, ':');
      std::getline(f, uid, ':');
      account_uids.insert(uid);
    }
  }
  std::vector<pid_t> nginx;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline && nginx.size() < 2) {
    nginx.clear();
    for (pid_t d : descendants(pid))
      if (cmdline(d).rfind("nginx", 0) == 0) nginx.push_back(d);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(nginx.size() >= 2);
  for (pid_t p : nginx) {
    const long uid = uid_of(p);
    CAPTURE(cmdline(p));
    CHECK(uid > 0);
    CHECK(!account_uids.count(std::to_string(uid)));
  }
  // ngxtls (and so nginx) is in a network namespace of its own.
  std::error_code ec;
  CHECK(fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/net", ec) !=
        fs::read_symlink("/proc/self/ns/net", ec));
  ::kill(pid, SIGINT);
  wait_exit(pid);
  CHECK(!fs::exists(marker));

  // A short run for the report: what was left out, and that nginx -t saw none of it.
  pid = spawn(
      {binary(), "check", conf, "--sandbox", "-n", "2", "--format", "json", "--fail-on", "never"},
      {{"TMPDIR", dir.path().string()}}, out);
  CHECK(wait_exit(pid) == 0);
  auto doc = parse_report(out);
  const std::string notes = all_notes(doc);
  CHECK(notes.find("ssl_certificate_by_lua_block: left out") != std::string::npos);
  CHECK(notes.find("ssl_session_fetch_by_lua_block: left out") != std::string::npos);
  CHECK(notes.find("load_module \"" + so + "\": left out") != std::string::npos);
  CHECK(doc["errors"].empty());
  CHECK(doc["sandbox"]["untested"].empty());
  CHECK(!fs::exists(marker));
}

TEST_CASE(
    "sandbox safety: without a network namespace, off-host resolver and OCSP responders are left "
    "out") {
  test::temp_dir dir;
  const std::string conf =
      dir.write("nginx.conf",
                "events {}\nhttp {\n  resolver 192.0.2.53 valid=30s;\n"
                "  server { listen 443 ssl; server_name a.test; ssl_stapling on;\n"
                "    ssl_stapling_responder http://192.0.2.80/ocsp; }\n"
                "  server { listen 444 ssl; server_name b.test; resolver 127.0.0.1;\n"
                "    ssl_stapling_responder http://127.0.0.1:9/; }\n}\n")
          .string();
  const std::string out = (dir.path() / "report.json").string();
  pid_t pid = spawn(
      {binary(), "check", conf, "--sandbox", "-n", "2", "--format", "json", "--fail-on", "never"},
      {{"TMPDIR", dir.path().string()}, {"NGXTLS_SANDBOX_NO_NETNS", "1"}}, out);
  CHECK(wait_exit(pid) == 0);
  auto doc = parse_report(out);
  const std::string notes = all_notes(doc);
  CHECK(notes.find("a.test: resolver \"192.0.2.53\": left out (off-host") != std::string::npos);
  CHECK(
      notes.find("a.test: ssl_stapling_responder \"http://192.0.2.80/ocsp\": left out (off-host") !=
      std::string::npos);
  // Loopback values stay.
  CHECK(notes.find("b.test: resolver") == std::string::npos);
  CHECK(notes.find("b.test: ssl_stapling_responder") == std::string::npos);
  CHECK(doc["sandbox"]["untested"].empty());
  CHECK(doc["errors"].empty());
  if (::geteuid() != 0) return;
  // In the loopback-only namespace a resolver given by name cannot be resolved: left out,
  // rather than a rejection production would not see.
  const std::string named =
      dir.write("named.conf",
                "events {}\nhttp {\n  server { listen 443 ssl; server_name a.test;\n"
                "    resolver dns.example.test 192.0.2.53; }\n}\n")
          .string();
  pid = spawn(
      {binary(), "check", named, "--sandbox", "-n", "2", "--format", "json", "--fail-on", "never"},
      {{"TMPDIR", dir.path().string()}}, out);
  CHECK(wait_exit(pid) == 0);
  doc = parse_report(out);
  CHECK(all_notes(doc).find("a.test: resolver \"dns.example.test\": left out (a host name") !=
        std::string::npos);
  CHECK(doc["errors"].empty());
}

TEST_CASE("sandbox safety: 2, 8 and 16 sandboxes at once all succeed") {
  // Forty sockets each: without network namespaces the runs pick from one port range, and
  // ports picked at the same moment collide (the restart must work).
  test::temp_dir dir;
  test::make_fixture_material(dir.path());
  std::string c =
      "events {}\nhttp {\n  ssl_certificate pki/noocsp/chain.pem;\n  ssl_certificate_key "
      "pki/noocsp/leaf.key;\n";
  for (int i = 0; i < 40; ++i)
    c += "  server { listen " + std::to_string(9000 + i) + " ssl; server_name s" +
         std::to_string(i) + ".test; }\n";
  const std::string conf = dir.write("nginx.conf", c + "}\n").string();
  struct mode {
    int n;
    env_list env;
  };
  const std::vector<mode> modes = {
      {2, {}},
      {8, {{"NGXTLS_SANDBOX_NO_NETNS", "1"}}},
      {16, {{"NGXTLS_SANDBOX_NO_NETNS", "1"}}},
      {16, {{"NGXTLS_SANDBOX_NO_NETNS", "1"}, {"NGXTLS_SANDBOX_NO_PIDNS", "1"}}},
      {16, {}},
  };
  for (const auto& m : modes) {
    CAPTURE(m.n);
    CAPTURE(m.env.size());
    env_list env = m.env;
    env.push_back({"TMPDIR", dir.path().string()});
    std::vector<pid_t> pids;
    for (int i = 0; i < m.n; ++i)
      pids.push_back(spawn({binary(), "check", conf, "--sandbox", "-n", "1", "--max-names", "2",
                            "--format", "json", "--fail-on", "never"},
                           env, (dir.path() / ("out-" + std::to_string(i))).string()));
    for (int i = 0; i < m.n; ++i) {
      CAPTURE(i);
      const std::string out = (dir.path() / ("out-" + std::to_string(i))).string();
      const int rc = wait_exit(pids[i]);
      CHECK_MESSAGE(rc == 0, slurp(out + ".err"));
      if (rc == 0) CHECK(parse_report(out)["sandbox"]["sockets"].size() == 40);
    }
  }
  // Without root: eight runs at once as nobody (no namespace, no identity change: nginx runs
  // as nobody too), in a directory of nobody's.
  // (Only when nobody can reach the binary: a checkout under a private directory hides it.)
  const bool nobody_runs_it = ::geteuid() == 0 && [] {
    pid_t p = ::fork();
    if (p == 0)
      _exit(::setgid(65534) == 0 && ::setuid(65534) == 0 && ::access(binary().c_str(), X_OK) == 0
                ? 0
                : 1);
    int st = 0;
    ::waitpid(p, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }();
  if (::geteuid() == 0 && !nobody_runs_it)
    MESSAGE("skipped the runs as nobody: it cannot reach " << binary());
  if (nobody_runs_it) {
    std::string tmpl = "/tmp/ngxtls-test-nobody-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()));
    const fs::path home = tmpl;
    struct cleanup {
      fs::path p;
      ~cleanup() {
        std::error_code ec;
        fs::remove_all(p, ec);
      }
    } gone{home};
    std::ofstream(home / "nginx.conf") << c + "}\n";
    REQUIRE(::chown(home.c_str(), 65534, 65534) == 0);
    REQUIRE(::chown((home / "nginx.conf").c_str(), 65534, 65534) == 0);
    std::vector<pid_t> pids;
    for (int i = 0; i < 8; ++i)
      pids.push_back(spawn({binary(), "check", (home / "nginx.conf").string(), "--sandbox", "-n",
                            "1", "--max-names", "2", "--format", "json", "--fail-on", "never"},
                           {{"TMPDIR", home.string()}},
                           (home / ("out-" + std::to_string(i))).string(), 0, 65534));
    for (int i = 0; i < 8; ++i) {
      CAPTURE(i);
      const std::string out = (home / ("out-" + std::to_string(i))).string();
      const int rc = wait_exit(pids[i]);
      CHECK_MESSAGE(rc == 0, slurp(out + ".err"));
      if (rc == 0) {
        auto doc = parse_report(out);
        CHECK(doc["sandbox"]["sockets"].size() == 40);
        CHECK(all_notes(doc).find("network: no network namespace") != std::string::npos);
      }
    }
  }
}

TEST_CASE(
    "sandbox safety: a config with 600 TLS sockets runs, with a soft descriptor limit of 1024") {
  test::temp_dir dir;
  test::make_fixture_material(dir.path());
  std::string c =
      "events {}\nhttp {\n  ssl_certificate pki/noocsp/chain.pem;\n  ssl_certificate_key "
      "pki/noocsp/leaf.key;\n";
  for (int i = 0; i < 600; ++i)
    c += "  server { listen " + std::to_string(10000 + i) + " ssl; server_name s" +
         std::to_string(i) + ".test; }\n";
  const std::string conf = dir.write("nginx.conf", c + "}\n").string();
  const std::string out = (dir.path() / "report.json").string();
  for (bool netns : {true, false}) {
    CAPTURE(netns);
    env_list env = {{"TMPDIR", dir.path().string()}};
    if (!netns) env.push_back({"NGXTLS_SANDBOX_NO_NETNS", "1"});
    pid_t pid = spawn({binary(), "check", conf, "--sandbox", "--instances", "2", "-n", "2",
                       "--format", "json", "--fail-on", "never"},
                      env, out, 1024);
    CHECK(wait_exit(pid) == 0);
    auto doc = parse_report(out);
    CHECK(doc["sandbox"]["sockets"].size() == 600);
    CHECK(doc["sandbox"]["untested"].empty());
    REQUIRE(doc["probe"]["targets"].size() == 16);  // --max-names
    for (const auto& t : doc["probe"]["targets"]) CHECK(t["error"].is_null());
  }
}

TEST_CASE(
    "sandbox safety: killed at any moment, a run leaves no directory after the next run, and "
    "another "
    "user's stays") {
  test::temp_dir dir;
  const std::string conf = rounds_config(dir, 12);
  const fs::path base = dir.path() / ("ngxtls-sandbox-" + std::to_string(::getuid()));
  fs::create_directories(base);
  ::chmod(base.c_str(), 0700);
  // Another user's run (dead owner): not ours to judge or remove.
  const fs::path foreign = base / "run-999999-1-abcdef";
  fs::create_directories(foreign / "instance-1");
  std::ofstream(foreign / "owner") << "999999 1\n";
  if (::geteuid() == 0) {
    REQUIRE(::chown(foreign.c_str(), 12345, 12345) == 0);
  }
  const bool foreign_is_other = ::geteuid() == 0;
  // What a run killed right after creating its directory leaves: its name says whose it was
  // (a process that is gone), nothing is in it yet.
  pid_t gone = ::fork();
  if (gone == 0) _exit(0);
  std::string gone_start;
  {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::string st = slurp("/proc/" + std::to_string(gone) + "/stat");
    std::istringstream f(st.substr(st.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 22 && f >> field; ++i) gone_start = field;
    ::waitpid(gone, nullptr, 0);
  }
  REQUIRE(!gone_start.empty());
  fs::create_directory(base / ("run-" + std::to_string(gone) + "-" + gone_start + "-Qx7pZa"));
  const env_list env = {{"TMPDIR", dir.path().string()}};
  const std::vector<std::string> argv = {binary(), "check", conf,        "--sandbox",
                                         "-n",     "10000", "--fail-on", "never"};
  auto ours = [&] {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(base, ec))
      if (e.path() != foreign) out.push_back(e.path().filename().string());
    return out;
  };
  // Moments: at once, a few ms in, while `nginx -t` runs (several times), once nginx serves.
  enum class when { at_ms, during_test, serving };
  struct moment {
    when w;
    int ms;
  };
  const std::vector<moment> moments = {
      {when::at_ms, 0},       {when::at_ms, 2},       {when::at_ms, 10}, {when::during_test, 0},
      {when::during_test, 1}, {when::during_test, 2}, {when::serving, 0}};
  int killed_during_test = 0;
  std::vector<long> test_uids;  // of the `nginx -t` processes seen
  for (bool no_pidns : {false, true}) {
    for (const auto& mo : moments) {
      CAPTURE(no_pidns);
      CAPTURE(static_cast<int>(mo.w));
      CAPTURE(mo.ms);
      env_list e = env;
      if (no_pidns) e.push_back({"NGXTLS_SANDBOX_NO_PIDNS", "1"});
      pid_t pid = spawn(argv, e);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      if (mo.w == when::at_ms) {
        std::this_thread::sleep_for(std::chrono::milliseconds(mo.ms));
      } else {
        int seen = 0;
        bool hit = false;
        while (!hit && std::chrono::steady_clock::now() < deadline) {
          for (pid_t d : mo.w == when::during_test ? children(pid) : descendants(pid)) {
            const std::string c = cmdline(d);
            if (mo.w == when::during_test && c.find(" -t ") != std::string::npos) {
              // `nginx -t` too runs unprivileged (its command line is nginx's only after exec).
              if (const long u = uid_of(d); u >= 0) test_uids.push_back(u);
              if (seen++ >= mo.ms) hit = true;
            }
            if (mo.w == when::serving && c.find("nginx: worker") != std::string::npos) hit = true;
          }
          if (!hit && mo.w == when::serving)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        CHECK(hit);
        if (hit && mo.w == when::during_test) ++killed_during_test;
      }
      ::kill(pid, SIGKILL);
      wait_exit(pid);
      // The next run sweeps what the killed one left.
      const pid_t next =
          spawn({binary(), "check", conf, "--sandbox", "-n", "1", "--fail-on", "never"}, e);
      CHECK(wait_exit(next) == 0);
      // A keeper that outlived its ngxtls cleans up within moments: allow it that.
      std::vector<std::string> left = ours();
      for (int i = 0; i < 100 && !left.empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        left = ours();
      }
      std::string names;
      for (const auto& n : left) names += n + " ";
      CHECK_MESSAGE(left.empty(), names);
      CHECK(fs::exists(foreign / "owner"));
    }
  }
  CHECK(killed_during_test >= 3);
  CHECK(!test_uids.empty());
  if (::geteuid() == 0)
    for (long u : test_uids) CHECK(u > 0);
  if (foreign_is_other) {
    struct stat st {};
    REQUIRE(::lstat(foreign.c_str(), &st) == 0);
    CHECK(st.st_uid == 12345u);
  }
}

TEST_CASE(
    "sandbox safety: the whole-config nginx -t loads no module, writes nothing outside the run "
    "directory and resolves no host name") {
  if (::geteuid() != 0) return;
  test::temp_dir dir;
  const fs::path marker = dir.path() / "module-ran";
  const auto src =
      dir.write("evil.c",
                "#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void "
                "ran(void) {"
                " int fd = open(\"" +
                    marker.string() + "\", O_WRONLY | O_CREAT, 0644); if (fd >= 0) close(fd); }\n");
  const std::string so = (dir.path() / "evil.so").string();
  auto cc = test::run({"cc", "-shared", "-fPIC", "-o", so, src.string()});
  REQUIRE_MESSAGE(cc.exit_code == 0, cc.err);
  // Paths the config names for nginx to write, outside the run directory (and outside the
  // test's own directory, which the sandbox's TMPDIR is in).
  restore_state restore;
  const std::string outside = "/var/tmp/ngxtls-whole-config-" + std::to_string(::getpid());
  fs::create_directories(outside);
  restore.created.push_back(outside);
  auto config = [&](bool upstream) {
    return "load_module " + so + ";\nuser root;\npid " + outside + "/nginx.pid;\nlock_file " +
           outside + "/nginx.lock;\nerror_log " + outside +
           "/error.log;\nevents {}\nhttp {\n  access_log " + outside +
           "/access.log;\n  client_body_temp_path " + outside + "/body;\n  proxy_cache_path " +
           outside + "/cache keys_zone=c:1m;\n" +
           (upstream ? "  upstream backend { server example.com:80; }\n" : "") +
           "  server { listen 443 ssl; server_name a.test;\n    location / { " +
           (upstream ? "proxy_pass http://backend; " : "") +
           "proxy_cache c; }\n  }\n  server { listen unix:" + outside +
           "/app.sock; location / { return 204; } }\n}\n";
  };
  std::vector<std::string> roots = {outside, "/var/log/nginx", "/run", "/var/lib/nginx"};
  for (const auto& p : compiled_in_paths()) {
    const fs::path parent = fs::path(p).parent_path();
    if (fs::exists(parent) && parent != "/" && parent != "/var" && parent != "/var/lib" &&
        parent != "/var/log")
      roots.push_back(parent.string());
  }
  const std::string out = (dir.path() / "report.json").string();
  for (bool upstream : {true, false}) {
    CAPTURE(upstream);
    const std::string conf = dir.write("nginx.conf", config(upstream)).string();
    const auto before = snapshot(roots);
    // nginx -t binds the config's listen sockets: the sysctls that let it do so as an
    // unprivileged uid are set in the sandbox's network namespace, never on the host.
    const std::string sysctls = slurp("/proc/sys/net/ipv4/ip_unprivileged_port_start") +
                                slurp("/proc/sys/net/ipv4/ip_nonlocal_bind") +
                                slurp("/proc/sys/net/ipv6/ip_nonlocal_bind");
    pid_t pid = spawn(
        {binary(), "check", conf, "--sandbox", "-n", "2", "--format", "json", "--fail-on", "never"},
        {{"TMPDIR", dir.path().string()}}, out);
    CHECK(wait_exit(pid) == 0);
    auto doc = parse_report(out);
    const auto& t = doc["nginx_test"];
    // nginx -t read every neutralised directive and accepted the config.
    CHECK(t["verdict"] == "passed");
    if (upstream) {
      // example.com resolves on a host with DNS: inside the sandbox's namespace nothing does,
      // so the upstream's host stands as 127.0.0.1 and the notes say so.
      CHECK(all_notes(doc).find("whole-config nginx -t: server at " + conf +
                                ":11:22: host \"example.com\" stands as 127.0.0.1") !=
            std::string::npos);
    }
    CHECK(all_notes(doc).find("whole-config nginx -t: load_module at " + conf + ":1:1: left out") !=
          std::string::npos);
    CHECK(!fs::exists(marker));
    const auto after = snapshot(roots);
    CHECK_MESSAGE(differences(before, after).empty(), differences(before, after));
    CHECK(fs::is_empty(outside));
    CHECK(slurp("/proc/sys/net/ipv4/ip_unprivileged_port_start") +
              slurp("/proc/sys/net/ipv4/ip_nonlocal_bind") +
              slurp("/proc/sys/net/ipv6/ip_nonlocal_bind") ==
          sysctls);
  }
  // Without the loopback-only namespace nginx could resolve names: the test is skipped.
  pid_t pid = spawn({binary(), "check", (dir.path() / "nginx.conf").string(), "--sandbox", "-n",
                     "2", "--format", "json", "--fail-on", "never"},
                    {{"TMPDIR", dir.path().string()}, {"NGXTLS_SANDBOX_NO_NETNS", "1"}}, out);
  CHECK(wait_exit(pid) == 0);
  auto doc = parse_report(out);
  CHECK(doc["nginx_test"]["verdict"] == "skipped");
  CHECK(doc["nginx_test"]["message"].get<std::string>().find("no network namespace") == 0);
  CHECK(!fs::exists(marker));
}
