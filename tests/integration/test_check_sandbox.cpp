// ngxtls check --sandbox: the rule fixtures run by the real nginx on loopback; verdicts must
// match the measured facts of docs/nginx-facts.md, and no nginx may outlive ngxtls, even after
// SIGKILL.

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <tuple>

#include "sandbox/sandbox_process.hpp"
#include "support/fixture_env.hpp"
#include "support/process.hpp"
#include "tls/ticket_key.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using json = nlohmann::json;

namespace {

// A rule fixture copied next to freshly generated key material (keys/, pki/), as the
// fixture driver lays it out.
struct fixture {
  test::temp_dir dir;
  std::string conf;
  explicit fixture(const std::string& rule_file) {
    test::make_fixture_material(dir.path());
    conf =
        dir.write("nginx.conf", test::read_file(test::source_dir() / "fixtures/rules" / rule_file))
            .string();
  }
};

json sandbox_check(const std::string& conf, std::vector<std::string> extra, int& rc) {
  std::vector<std::string> argv = {
      test::ngxtls_binary(), "check", conf, "--sandbox", "--format", "json", "--fail-on", "never"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto r = test::run(argv, "", 120);
  rc = r.exit_code;
  INFO("stderr: " << r.err);
  REQUIRE(!r.out.empty());
  return json::parse(r.out);
}

const json* find_finding(const json& doc, const std::string& rule, const std::string& level = "") {
  for (const auto& f : doc["findings"])
    if (f["rule"] == rule && (level.empty() || f["severity"] == level)) return &f;
  return nullptr;
}

// Distinct ticket key names across every probed target and run.
std::set<std::string> key_names(const json& doc) {
  std::set<std::string> out;
  for (const auto& t : doc["probe"]["targets"])
    for (const auto& p : t["protocols"])
      for (const auto& [name, n] : p["ticket_key_names"].items()) out.insert(name);
  return out;
}

// Attempts and resumptions summed over the probe runs `keep` selects.
std::pair<int, int> resumption(const json& doc, const std::function<bool(const json&)>& keep) {
  int attempts = 0, resumed = 0;
  for (const auto& t : doc["probe"]["targets"])
    for (const auto& p : t["protocols"])
      if (keep(p)) {
        attempts += p["attempts"].get<int>();
        resumed += p["resumed"].get<int>();
      }
  return {attempts, resumed};
}

std::string all_notes(const json& doc) {
  std::string s;
  for (const auto& n : doc["sandbox"]["notes"])
    s += n["server"].get<std::string>() + ": " + n["text"].get<std::string>() + "\n";
  return s;
}

bool alive(pid_t p) {
  std::ifstream in("/proc/" + std::to_string(p) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// Every descendant of `root`, from /proc.
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

std::string comm(pid_t p) {
  std::ifstream in("/proc/" + std::to_string(p) + "/comm");
  std::string s;
  std::getline(in, s);
  return s;
}

// Starts ngxtls with TMPDIR=tmp in the background; returns its pid.
pid_t spawn(const std::vector<std::string>& argv, const std::string& tmp, bool no_pidns) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("TMPDIR", tmp.c_str(), 1);
    if (no_pidns) ::setenv("NGXTLS_SANDBOX_NO_PIDNS", "1", 1);
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

TEST_CASE("sandbox: tickets off without a session cache is confirmed") {
  fixture fx("tls13-resumption-disabled/tickets-off-no-cache.conf");
  int rc = 0;
  auto doc = sandbox_check(fx.conf, {}, rc);
  CHECK(rc == 0);
  const json* f = find_finding(doc, "tls13-resumption-disabled", "error");
  REQUIRE(f);
  CHECK((*f)["verdict"] == "confirmed");
  CHECK((*f)["verdict_reason"].get<std::string>().find("resumed 0/20") != std::string::npos);
  // The fixture names no certificate: the sandbox stood one in and says so.
  CHECK(all_notes(doc).find("no ssl_certificate applies") != std::string::npos);
  CHECK(doc["sandbox"]["untested"].empty());
}

TEST_CASE("sandbox: tickets off with a shared cache resumes TLS 1.3 and has no error") {
  fixture fx("tls13-resumption-disabled/tickets-off-shared-cache.conf");
  int rc = 0;
  auto doc = sandbox_check(fx.conf, {}, rc);
  CHECK(find_finding(doc, "tls13-resumption-disabled", "error") == nullptr);
  const json* note = find_finding(doc, "tls13-resumption-disabled", "note");
  REQUIRE(note);
  CHECK((*note)["verdict"] == "confirmed");
  auto [attempts, resumed] =
      resumption(doc, [](const json& p) { return p["protocol"] == "TLSv1.3"; });
  CHECK(attempts == 20);
  CHECK(resumed == 20);
}

TEST_CASE("sandbox: automatic ticket keys on two instances are confirmed with two key names") {
  fixture fx("ticket-keys-not-shared/no-key-file.conf");
  int rc = 0;
  auto doc = sandbox_check(fx.conf, {"--instances", "2"}, rc);
  const json* f = find_finding(doc, "ticket-keys-not-shared");
  REQUIRE(f);
  CHECK((*f)["verdict"] == "confirmed");
  // Two masters, each with its own automatic key; with 20+20 connections spread by the
  // kernel's reuseport hash, both are seen unless every connection hashes to one (2^-39).
  CHECK(key_names(doc).size() == 2);
  CHECK(doc["sandbox"]["instances"] == 2);
}

TEST_CASE("sandbox: one ticket key file on two instances resumes 100% with the file's key name") {
  fixture fx("ticket-keys-not-shared/reuseport-shared-key.conf");
  const std::string k1_name =
      tls::inspect_ticket_key_file((fx.dir.path() / "keys/k1.key").string()).key_name_hex;
  int rc = 0;
  auto doc = sandbox_check(fx.conf, {"--instances", "2"}, rc);
  CHECK(find_finding(doc, "ticket-keys-not-shared") == nullptr);
  int ticket_runs = 0;
  for (const auto& t : doc["probe"]["targets"])
    for (const auto& p : t["protocols"])
      if (p["mechanism"] == "ticket") {
        ++ticket_runs;
        CHECK(p["resumed"] == p["attempts"]);
      }
  CHECK(ticket_runs == 2);
  CHECK(key_names(doc) == std::set<std::string>{k1_name});
  bool traced = false;
  for (const auto& k : doc["key_names"])
    traced = traced || k.get<std::string>().find("keys/k1.key") != std::string::npos;
  CHECK(traced);
}

TEST_CASE(
    "sandbox: --reload throws automatic ticket keys away (confirmed), a key file survives it") {
  SUBCASE("automatic keys") {
    fixture fx("ticket-keys-not-shared/no-key-file.conf");
    int rc = 0;
    auto doc = sandbox_check(fx.conf, {"--reload"}, rc);
    const json* f = find_finding(doc, "ticket-keys-not-shared");
    REQUIRE(f);
    CHECK((*f)["verdict"] == "confirmed");
    CHECK((*f)["verdict_reason"].get<std::string>().find("resumed 0/20 after it") !=
          std::string::npos);
    CHECK(doc["sandbox"]["reload"] == true);
  }
  SUBCASE("a key file") {
    fixture fx("ticket-keys-not-shared/reuseport-shared-key.conf");
    int rc = 0;
    auto doc = sandbox_check(fx.conf, {"--reload"},
                             rc);  // nginx 1.22.1 default protocols: TLS 1.2 tickets
    auto [offered, resumed] =
        resumption(doc, [](const json& p) { return p["session_source"] == "sess_in"; });
    CHECK(offered == 20);
    CHECK(resumed == 20);
  }
}

TEST_CASE(
    "sandbox: stapling that can never staple is confirmed, without OCSP URL or without issuer") {
  for (const char* file :
       {"ocsp-stapling-dead/no-ocsp-url.conf", "ocsp-stapling-dead/leaf-only-no-issuer.conf"}) {
    CAPTURE(file);
    fixture fx(file);
    int rc = 0;
    auto doc = sandbox_check(fx.conf, {}, rc);
    const json* f = find_finding(doc, "ocsp-stapling-dead", "warning");
    REQUIRE(f);
    CHECK((*f)["verdict"] == "confirmed");
    CHECK((*f)["verdict_reason"].get<std::string>().find("no staple on any of") !=
          std::string::npos);
  }
}

TEST_CASE("sandbox: a directive nginx rejects confirms the error that predicted it") {
  fixture fx("ticket-key-rotation/bad-size.conf");
  int rc = 0;
  auto doc = sandbox_check(fx.conf, {}, rc);
  const json* f = find_finding(doc, "ticket-key-rotation", "error");
  REQUIRE(f);
  CHECK((*f)["verdict"] == "confirmed");
  CHECK((*f)["verdict_reason"].get<std::string>().find("must be 48 or 80 bytes") !=
        std::string::npos);
  // The rest of the server still ran, with the valid key file.
  CHECK(doc["sandbox"]["untested"].empty());
  CHECK(all_notes(doc).find("left out to test the rest") != std::string::npos);
}

TEST_CASE("sandbox: a file named by two directives is blamed on the one nginx rejects") {
  // The key file named as the ticket key too: nginx's message quotes the file and names the
  // server's closing brace, so the message alone matches ssl_certificate_key as well.
  test::temp_dir dir;
  test::make_certificate_material(dir.path());
  const std::string pki = (dir.path() / "pki" / "named").string();
  const std::string conf = dir.write("nginx.conf",
                                     "events {}\n"
                                     "http {\n"
                                     "    server {\n"
                                     "        listen 443 ssl;\n"
                                     "        ssl_certificate " +
                                         pki +
                                         "/chain.pem;\n"
                                         "        ssl_certificate_key " +
                                         pki +
                                         "/leaf.key;\n"
                                         "        ssl_session_ticket_key " +
                                         pki +
                                         "/leaf.key;\n"
                                         "    }\n"
                                         "}\n")
                               .string();
  int rc = 0;
  auto doc = sandbox_check(conf, {"--tls1.3", "-n", "2"}, rc);
  const json* f = find_finding(doc, "ticket-key-rotation", "error");
  REQUIRE(f);
  CHECK((*f)["verdict"] == "confirmed");
  // The ticket key alone is left out; the certificate and its key stay, so the server runs.
  const std::string notes = all_notes(doc);
  CAPTURE(notes);
  CHECK(notes.find("nginx -t rejects ssl_session_ticket_key at " + conf + ":7:9") !=
        std::string::npos);
  CHECK(notes.find("rejects ssl_certificate_key") == std::string::npos);
  CHECK(notes.find("rejects ssl_certificate ") == std::string::npos);
  CHECK(doc["sandbox"]["untested"].empty());
}

TEST_CASE(
    "sandbox: absent certificate, key and ticket key files get stand-ins, and the report says so") {
  test::temp_dir dir;
  auto conf = dir.write("nginx.conf",
                        "worker_processes 2;\nevents {}\nhttp {\n  server {\n    listen 443 ssl;\n"
                        "    server_name shop.example.test;\n"
                        "    ssl_certificate /etc/ngxtls-absent/shop.pem;\n"
                        "    ssl_certificate_key /etc/ngxtls-absent/shop.key;\n"
                        "    ssl_session_ticket_key /etc/ngxtls-absent/ticket.key;\n"
                        "    ssl_session_cache shared:S:1m;\n  }\n}\n");
  int rc = 0;
  auto doc = sandbox_check(conf.string(), {"--instances", "2"}, rc);
  CHECK(rc == 0);
  const std::string notes = all_notes(doc);
  CHECK(notes.find(
            "ssl_certificate \"/etc/ngxtls-absent/shop.pem\" is not readable here: stand-in") !=
        std::string::npos);
  CHECK(notes.find("ssl_session_ticket_key \"/etc/ngxtls-absent/ticket.key\" is not readable here: "
                   "stand-in key file of 80 bytes") != std::string::npos);
  // Both instances share the one stand-in key file, as they would share the real one.
  REQUIRE(doc["probe"]["targets"].size() == 1);
  CHECK(doc["probe"]["targets"][0]["error"].is_null());
  CHECK(key_names(doc).size() == 1);
  for (const auto& p : doc["probe"]["targets"][0]["protocols"])
    if (p["mechanism"] == "ticket") CHECK(p["resumed"] == p["attempts"]);
  CHECK(doc["probe"]["targets"][0]["sni"] == "shop.example.test");
}

TEST_CASE("sandbox: stream servers run with the stream module and their resumption is measured") {
  {
    fixture fx("tls13-resumption-disabled/stream-server.conf");
    int rc = 0;
    auto doc = sandbox_check(fx.conf, {"--tls1.3"}, rc);
    const json* f = find_finding(doc, "tls13-resumption-disabled", "error");
    REQUIRE(f);
    CHECK((*f)["verdict"] == "confirmed");
  }
  {
    // The control: a stream server with a shared cache resumes every attempt. nginx's stream
    // `return` closes without waiting: the prober must not let that spoil its sessions.
    test::temp_dir dir;
    auto conf = dir.write(
        "nginx.conf",
        "events {}\nstream {\n  ssl_protocols TLSv1.2 TLSv1.3;\n  ssl_session_cache shared:S:1m;\n"
        "  server { listen 6443 ssl; proxy_pass 127.0.0.1:9; }\n}\n");
    int rc = 0;
    auto doc = sandbox_check(conf.string(), {}, rc);
    int runs = 0;
    for (const auto& t : doc["probe"]["targets"])
      for (const auto& p : t["protocols"]) {
        ++runs;
        CAPTURE(p["protocol"]);
        CAPTURE(p["mechanism"]);
        CHECK(p["attempts"] == 20);
        CHECK(p["resumed"] == 20);
      }
    CHECK(runs == 3);
  }
}

TEST_CASE("sandbox: usage errors") {
  fixture fx("tls13-resumption-disabled/tickets-off-no-cache.conf");
  auto r = test::run(
      {test::ngxtls_binary(), "check", fx.conf, "--sandbox", "--endpoint", "example.com"});
  CHECK(r.exit_code == 2);
  r = test::run(
      {test::ngxtls_binary(), "check", fx.conf, "--instances", "2", "--endpoint", "example.com"});
  CHECK(r.exit_code == 2);
  r = test::run(
      {test::ngxtls_binary(), "check", fx.conf, "--sandbox", "--nginx", "/nonexistent/nginx"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("/nonexistent/nginx is not an executable file") != std::string::npos);
}

TEST_CASE(
    "sandbox: no nginx outlives ngxtls killed with SIGKILL or Ctrl-C, and the run directory goes") {
  struct way {
    int sig;
    bool no_pidns;
  };
  for (way w : {way{SIGKILL, false}, way{SIGKILL, true}, way{SIGINT, false}, way{SIGINT, true}}) {
    const bool no_pidns = w.no_pidns;
    CAPTURE(w.sig);
    CAPTURE(no_pidns);
    fixture fx("ticket-keys-not-shared/reuseport-shared-key.conf");
    const std::string tmp = (fx.dir.path() / "tmp").string();
    fs::create_directories(tmp);
    // Many attempts: still probing when it is killed.
    pid_t pid = spawn({test::ngxtls_binary(), "check", fx.conf, "--sandbox", "--instances", "2",
                       "-n", "10000", "--fail-on", "never"},
                      tmp, no_pidns);
    REQUIRE(pid > 0);
    std::vector<pid_t> nginx;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      nginx.clear();
      for (pid_t d : descendants(pid))
        if (comm(d).rfind("nginx", 0) == 0) nginx.push_back(d);
      if (nginx.size() >= 2 + 2 * 4) break;  // two masters with four workers each
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(nginx.size() >= 10);
    const auto run_dirs = [&] {
      std::vector<fs::path> out;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(
               fs::path(tmp) / ("ngxtls-sandbox-" + std::to_string(::getuid())), ec))
        out.push_back(e.path());
      return out;
    };
    CHECK(run_dirs().size() == 1);
    ::kill(pid, w.sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
      gone = true;
      for (pid_t p : nginx) gone = gone && !alive(p);
      gone = gone && run_dirs().empty();
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (pid_t p : nginx) CHECK_MESSAGE(!alive(p), "nginx pid " << p << " survived");
    CHECK(run_dirs().empty());
  }
}

TEST_CASE("sandbox: a later run removes what a killed run left") {
  fixture fx("tls13-resumption-disabled/tickets-off-no-cache.conf");
  const fs::path tmp = fx.dir.path() / "tmp";
  const fs::path base = tmp / ("ngxtls-sandbox-" + std::to_string(::getuid()));
  const fs::path stale = base / "run-stale1";
  fs::create_directories(stale);
  ::chmod(base.c_str(), 0700);
  // A leftover master of the killed run: a copy of sleep whose command name starts with
  // "nginx" and whose command line names the run directory, as nginx's master title does.
  const fs::path fake = fx.dir.path() / "nginx-leftover";
  fs::copy_file("/bin/sleep", fake);
  const std::string title =
      "nginx: master process /usr/sbin/nginx -p " + stale.string() + "/instance-1/";
  pid_t leftover = ::fork();
  if (leftover == 0) {
    ::setpgid(0, 0);
    ::execl(fake.c_str(), title.c_str(), "300", static_cast<char*>(nullptr));
    _exit(127);
  }
  ::setpgid(leftover, leftover);
  std::ofstream(stale / "owner") << "999999 1\n";
  std::ofstream(stale / "pgids") << leftover << "\n";
  std::ofstream(stale / "nginx.conf") << "# left over\n";
  for (int i = 0; i < 100 && comm(leftover).rfind("nginx", 0) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(alive(leftover));

  pid_t pid =
      spawn({test::ngxtls_binary(), "check", fx.conf, "--sandbox", "-n", "2", "--fail-on", "never"},
            tmp.string(), false);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(!fs::exists(stale));
  int wstatus = 0;
  pid_t reaped = 0;
  for (int i = 0; i < 200 && reaped == 0; ++i) {
    reaped = ::waitpid(leftover, &wstatus, WNOHANG);
    if (reaped == 0) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (reaped == 0) {
    ::kill(leftover, SIGKILL);
    ::waitpid(leftover, nullptr, 0);
  }
  CHECK(reaped == leftover);  // it was killed, so it could be reaped
  CHECK(WIFSIGNALED(wstatus));
  if (WIFSIGNALED(wstatus)) CHECK(WTERMSIG(wstatus) == SIGKILL);
}

TEST_CASE(
    "README's main command: the demo in a sandbox exits 0 with the demo's hazards confirmed") {
  const std::string readme = test::read_file(test::source_dir() / "README.md");
  CHECK(readme.find("ngxtls check fixtures/demo/nginx.conf --sandbox --fail-on never") !=
        std::string::npos);
  auto r = test::run({test::ngxtls_binary(), "check", "fixtures/demo/nginx.conf", "--sandbox",
                      "--fail-on", "never", "--format", "json"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  auto doc = json::parse(r.out);
  std::map<std::string, int> confirmed;
  for (const auto& f : doc["findings"])
    if (f["verdict"] == "confirmed") ++confirmed[f["rule"].get<std::string>()];
  // hardening.conf's tickets off on the default server of *:443, and www.conf's tickets on
  // under it: both never resume; stapling without an OCSP URL; the 32-byte ticket key file.
  CHECK(confirmed["tls13-resumption-disabled"] == 2);
  CHECK(confirmed["ocsp-stapling-dead"] == 1);
  CHECK(confirmed["ticket-key-rotation"] == 1);
  CHECK(doc["sandbox"]["sockets"].size() == 3);
}

TEST_CASE("sandbox: a builtin cache split over four reuseport workers is confirmed") {
  test::temp_dir dir;
  auto conf = dir.write(
      "nginx.conf",
      "worker_processes 4;\nevents {}\nhttp {\n  ssl_session_cache builtin:20000;\n"
      "  server {\n    listen 443 ssl reuseport;\n    server_name a.example.test;\n  }\n}\n");
  int rc = 0;
  // 80 attempts: each reaches the caching worker with p = 1/4, so 0 or 80 resumed has
  // probability below 1e-9 (measured 18-23 of 80 in session 1).
  auto doc = sandbox_check(conf.string(), {"--tls1.2", "-n", "80"}, rc);
  const json* f = find_finding(doc, "session-cache-per-worker");
  REQUIRE(f);
  CHECK((*f)["verdict"] == "confirmed");
}

TEST_CASE("sandbox --baseline: a rotation is tried on sessions taken under the old config") {
  auto run_rotation = [](const std::string& file, int& offered, int& resumed) {
    fixture fx("ticket-key-rotation/" + file);
    fx.dir.write("base/k1-only.conf",
                 test::read_file(test::source_dir() /
                                 "fixtures/rules/ticket-key-rotation/base/k1-only.conf"));
    int rc = 0;
    auto doc =
        sandbox_check(fx.conf, {"--baseline", (fx.dir.path() / "base/k1-only.conf").string()}, rc);
    std::tie(offered, resumed) =
        resumption(doc, [](const json& p) { return p["session_source"] == "sess_in"; });
    CHECK(doc["sandbox"]["reload"] == true);
    return doc;
  };
  int offered = 0, resumed = 0;
  SUBCASE("[k1] -> [k3, k2] drops the encrypting key: confirmed") {
    auto doc = run_rotation("rotation-drops-encrypting-key.conf", offered, resumed);
    const json* f = find_finding(doc, "ticket-key-rotation", "error");
    REQUIRE(f);
    CHECK((*f)["verdict"] == "confirmed");
    CHECK(offered == 20);
    CHECK(resumed == 0);
  }
  SUBCASE("[k1] -> [k2, k1] keeps it: every saved session resumes") {
    auto doc = run_rotation("rotation-keeps-previous.conf", offered, resumed);
    CHECK(find_finding(doc, "ticket-key-rotation", "error") == nullptr);
    CHECK(offered == 20);
    CHECK(resumed == 20);
  }
}

TEST_CASE(
    "sandbox: per-SNI ssl_protocols are ignored, and nginx 1.22's default has no "
    "TLS 1.3") {
  {
    fixture fx("protocols-ignored-per-sni/tls13-only-sni.conf");
    int rc = 0;
    auto doc = sandbox_check(fx.conf, {"--select", "protocols-ignored-per-sni"}, rc);
    const json* f = find_finding(doc, "protocols-ignored-per-sni");
    REQUIRE(f);
    CHECK((*f)["verdict"] == "confirmed");
    CHECK((*f)["verdict_reason"].get<std::string>().find("TLSv1.2 accepted under this name") !=
          std::string::npos);
  }
  {
    fixture fx("tls13-missing/default-122.conf");
    int rc = 0;
    auto doc = sandbox_check(fx.conf, {"--select", "tls13-missing"}, rc);
    const json* f = find_finding(doc, "tls13-missing");
    REQUIRE(f);
    // The sandbox nginx is Debian's 1.22.1, whose default ssl_protocols stop at TLSv1.2.
    CHECK((*f)["verdict"] == "confirmed");
  }
}

TEST_CASE("sandbox: what nginx refuses and no rule predicted is an error that fails the run") {
  test::temp_dir dir;
  auto conf = dir.write(
      "nginx.conf",
      "events {}\nhttp {\n  ssl_protocols TLSv1.2 TLSv1.3;\n"
      "  server { listen 443 ssl default_server; server_name a.test; }\n"
      "  server { listen 443 ssl default_server; server_name b.test; }\n"
      "  server { listen 9443 ssl reuseport; server_name d.test; }\n"
      "  server { listen 9443 ssl backlog=10; server_name e.test; }\n"
      "  server { listen 7443 ssl; listen 7443 quic reuseport; server_name q.test; }\n}\n");
  int rc = 0;
  auto doc = sandbox_check(conf.string(), {"-n", "2"}, rc);
  std::string errors;
  for (const auto& e : doc["errors"]) errors += e.get<std::string>() + "\n";
  // The same words nginx -t prints for the production config, with the configured socket.
  CHECK(errors.find("a duplicate default server for *:443") != std::string::npos);
  CHECK(errors.find("duplicate listen options for *:9443") != std::string::npos);
  // nginx 1.22 has no QUIC: directive-arguments predicts it, so nginx -t confirms that finding
  // and it is not an unpredicted error.
  CHECK(errors.find("quic") == std::string::npos);
  bool quic_confirmed = false;
  for (const auto& f : doc["findings"])
    quic_confirmed = quic_confirmed ||
                     (f["rule"] == "directive-arguments" && f["verdict"] == "confirmed" &&
                      f["verdict_reason"].get<std::string>().find("invalid parameter \"quic\"") !=
                          std::string::npos);
  CHECK(quic_confirmed);
  CHECK(doc["sandbox"]["untested"].size() == 3);
  CHECK(rc == 0);  // --fail-on never
  auto r = test::run({test::ngxtls_binary(), "check", conf.string(), "--sandbox", "-n", "2",
                      "--fail-on", "error"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("error: nginx -t rejects") != std::string::npos);
}

TEST_CASE("sandbox: 0-RTT replayed and answered confirms early-data-replay") {
  fixture fx("early-data-replay/no-header.conf");
  int rc = 0;
  auto doc = sandbox_check(fx.conf, {"--tls1.3"}, rc);
  const json* f = find_finding(doc, "early-data-replay", "warning");
  REQUIRE(f);
  CHECK((*f)["verdict"] == "confirmed");
  CHECK((*f)["verdict_reason"] ==
        "a replayed 0-RTT HEAD / was accepted and answered, not refused with 425 Too Early (the "
        "probe sees nginx's answer to HEAD /, not which locations pass $ssl_early_data on)");
  // The finding names the location the probe cannot see into.
  CHECK((*f)["message"].get<std::string>().find("from location / (line 9, proxy_pass)") !=
        std::string::npos);
  // The probe sent early data (check --sandbox only) and nginx accepted the replay.
  bool replayed = false;
  for (const auto& t : doc["probe"]["targets"])
    for (const auto& p : t["protocols"])
      if (p["early_data"].is_object())
        replayed = replayed || p["early_data"]["replay"]["outcome"] == "accepted";
  CHECK(replayed);
}
