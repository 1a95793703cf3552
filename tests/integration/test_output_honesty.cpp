// Output that cannot lie, through the real binary: a report that could not be written is an
// error (full disk, closed pipe), `-o` replaces its path by rename without following a planted
// symlink, config bytes reach a terminal escaped, .ngxtls.toml is read only from a trusted
// file below the repository root or home, and the CLI refuses what it cannot do honestly.

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/format.hpp"
#include "support/nginx_run.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using namespace ngxtls::test;

namespace {

// A finding (tls13-resumption-disabled, an error) so that every format has something to say.
const char* tickets_off = R"(events {}
http {
    server {
        listen 443 ssl;
        ssl_protocols TLSv1.3;
        ssl_session_tickets off;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
    }
}
)";

enum class sink { dev_full, closed_pipe };

// Runs ngxtls in `cwd` with stdout on /dev/full or on a pipe whose reader has gone, SIGPIPE at
// its default disposition (as a shell leaves it). exit_code is 128+signal when killed.
command_result run_with_stdout(const std::vector<std::string>& args, sink where,
                               const fs::path& cwd) {
  int err_pipe[2];
  REQUIRE(::pipe2(err_pipe, O_CLOEXEC) == 0);
  int out_fd = -1;
  int out_pipe[2] = {-1, -1};
  if (where == sink::dev_full) {
    out_fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  } else {
    REQUIRE(::pipe2(out_pipe, O_CLOEXEC) == 0);
    ::close(out_pipe[0]);  // nobody will read
    out_fd = out_pipe[1];
  }
  REQUIRE(out_fd >= 0);
  const std::string bin = ngxtls_binary();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(out_fd, 1);
    ::dup2(err_pipe[1], 2);
    const int null_in = ::open("/dev/null", O_RDONLY);
    ::dup2(null_in, 0);
    std::vector<char*> argv{const_cast<char*>(bin.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_pipe[1]);
  command_result r;
  char buf[4096];
  for (ssize_t n; (n = ::read(err_pipe[0], buf, sizeof buf)) > 0;)
    r.err.append(buf, static_cast<std::size_t>(n));
  ::close(err_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

command_result ngxtls_in(const fs::path& cwd, const std::vector<std::string>& args,
                         const std::string& input = "") {
  std::string cmd = "cd '" + cwd.string() + "' && exec '" + ngxtls_binary() + "'";
  for (const auto& a : args) {
    std::string q;
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += " '" + q + "'";
  }
  return run({"sh", "-c", cmd}, input);
}

}  // namespace

TEST_CASE(
    "a report written to a full disk is exit 2 with the reason, for every command that prints") {
  temp_dir dir;
  dir.write("n.conf", tickets_off);
  const std::vector<std::vector<std::string>> commands = {
      {"lint", "n.conf", "--nginx-version", "1.22.1"},
      {"lint", "n.conf", "--nginx-version", "1.22.1", "--format", "json"},
      {"lint", "n.conf", "--nginx-version", "1.22.1", "--format", "sarif"},
      {"lint", "n.conf", "--nginx-version", "1.22.1", "--fix"},
      {"parse", "n.conf"},
      {"rules"},
      {"harden", "--nginx-version", "1.22.1", "--openssl-version", "3.0"},
  };
  for (const auto& args : commands) {
    INFO(args[0] << " " << (args.size() > 1 ? args.back() : ""));
    auto r = run_with_stdout(args, sink::dev_full, dir.path());
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("ngxtls: error: cannot write to stdout: No space left on device") !=
          std::string::npos);
  }
  // -o onto the full device.
  auto r =
      ngxtls_in(dir.path(), {"lint", "n.conf", "--nginx-version", "1.22.1", "-o", "/dev/full"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("ngxtls: error: cannot write /dev/full: No space left on device") !=
        std::string::npos);
  r = ngxtls_in(dir.path(), {"harden", "--nginx-version", "1.22.1", "--openssl-version", "3.0",
                             "-o", "/dev/full"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("cannot write /dev/full") != std::string::npos);
}

TEST_CASE("a closed pipe on stdout is exit 2 with Broken pipe, neither 0 nor a silent kill") {
  temp_dir dir;
  dir.write("n.conf", tickets_off);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"lint", "n.conf", "--nginx-version", "1.22.1"}, {"parse", "n.conf"}, {"rules"}}) {
    INFO(args[0]);
    auto r = run_with_stdout(args, sink::closed_pipe, dir.path());
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("ngxtls: error: cannot write to stdout: Broken pipe") != std::string::npos);
  }
}

TEST_CASE("-o replaces a symlink planted at its path instead of writing through it") {
  temp_dir dir;
  dir.write("n.conf", tickets_off);
  const auto victim = dir.write("victim.txt", "precious\n");
  fs::create_symlink(victim, dir.path() / "report.txt");
  auto r =
      ngxtls_in(dir.path(), {"lint", "n.conf", "--nginx-version", "1.22.1", "-o", "report.txt"});
  CHECK(r.exit_code == 1);
  CHECK(read_file(victim) == "precious\n");
  CHECK_FALSE(fs::is_symlink(dir.path() / "report.txt"));
  CHECK(read_file(dir.path() / "report.txt").find("[tls13-resumption-disabled]") !=
        std::string::npos);
  // An existing report is replaced by rename (a new inode), keeping its mode, and no temporary
  // file is left behind.
  const auto report = dir.write("old.txt", "old\n");
  fs::permissions(report, fs::perms(0640));
  struct stat before {
  }, after{};
  REQUIRE(::stat(report.c_str(), &before) == 0);
  r = ngxtls_in(dir.path(), {"lint", "n.conf", "--nginx-version", "1.22.1", "--format", "json",
                             "-o", "old.txt"});
  CHECK(r.exit_code == 1);
  REQUIRE(::stat(report.c_str(), &after) == 0);
  CHECK(after.st_ino != before.st_ino);
  CHECK((after.st_mode & 07777) == 0640);
  CHECK(nlohmann::json::parse(read_file(report))["findings"].size() >= 1);
  for (const auto& e : fs::directory_iterator(dir.path()))
    CHECK_MESSAGE(e.path().filename().string().find(".ngxtls-") == std::string::npos, e.path());
}

TEST_CASE("-o naming a configuration file being read is refused, the file left as it was") {
  temp_dir dir;
  dir.write("n.conf", std::string(tickets_off) + "include extra.conf;\n");
  dir.write("extra.conf", "# an included file\n");
  dir.write("old.conf", tickets_off);
  fs::create_hard_link(dir.path() / "extra.conf", dir.path() / "alias.conf");
  // The main file, an included file through another name (a hard link), and the baseline.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"lint", "n.conf", "-o", "n.conf"},
        std::vector<std::string>{"lint", "n.conf", "-o", "alias.conf"},
        std::vector<std::string>{"lint", "n.conf", "--baseline", "old.conf", "-o", "old.conf"},
        std::vector<std::string>{"check", "n.conf", "--endpoint", "127.0.0.1:9", "-o", "n.conf"}}) {
    CAPTURE(args.back());
    auto with_version = args;
    with_version.insert(with_version.begin() + 2, {"--nginx-version", "1.22.1"});
    auto r = ngxtls_in(dir.path(), with_version);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("refusing to replace it with the report") != std::string::npos);
  }
  CHECK(read_file(dir.path() / "n.conf") == std::string(tickets_off) + "include extra.conf;\n");
  CHECK(read_file(dir.path() / "extra.conf") == "# an included file\n");
  CHECK(read_file(dir.path() / "old.conf") == tickets_off);
  // A symlink to the config at the -o path is replaced, not followed: that is allowed.
  fs::create_symlink(dir.path() / "n.conf", dir.path() / "link.txt");
  auto r = ngxtls_in(dir.path(), {"lint", "n.conf", "--nginx-version", "1.22.1", "-o", "link.txt"});
  CHECK(r.exit_code == 1);
  CHECK(read_file(dir.path() / "n.conf") == std::string(tickets_off) + "include extra.conf;\n");
}

TEST_CASE("text output and error messages show control bytes from the config as \\x escapes") {
  temp_dir dir;
  // An unknown directive whose name holds ESC [ 2 J (clear screen), BEL and DEL.
  dir.write("n.conf", std::string("events {}\nhttp {\n    ssl_evil\x1b[2J\x07\x7f on;\n}\n"));
  auto r = ngxtls_in(dir.path(), {"lint", "n.conf", "--nginx-version", "1.22.1"});
  CAPTURE(r.out);
  CHECK(r.out.find("[unknown-directive]") != std::string::npos);
  CHECK(r.out.find("ssl_evil\\x1b[2J\\x07\\x7f") != std::string::npos);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(r.out.find('\x07') == std::string::npos);
  CHECK(r.out.find('\x7f') == std::string::npos);
  // An 8-bit CSI (U+009B as UTF-8) and a stray 0x9b byte are escaped too; other UTF-8 is kept.
  dir.write("u.conf", std::string("events {}\nhttp {\n    ssl_\xc2\x9b"
                                  "31m_\x9b_\xc3\xa9 on;\n}\n"));
  r = ngxtls_in(dir.path(), {"lint", "u.conf", "--nginx-version", "1.22.1"});
  CHECK(r.out.find("ssl_\\xc2\\x9b31m_\\x9b_\xc3\xa9") != std::string::npos);
  // stderr: an error naming a file whose name holds ESC.
  r = ngxtls_in(dir.path(), {"lint", std::string("missing\x1b]0;pwned\x07.conf")});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find('\x1b') == std::string::npos);
  CHECK(r.err.find("missing\\x1b]0;pwned\\x07.conf") != std::string::npos);
  // stderr of probe: a target that holds ESC (from the command line or a --targets file) in
  // the "cannot probe" line (--connect: only a closed port on loopback is dialled, no name is
  // resolved); and an unknown command word.
  r = ngxtls_in(dir.path(), {"probe", std::string("a\x1b]0;pwned\x07") + "x:1", "--connect",
                             "127.0.0.1:1", "--timeout", "2000"});
  CAPTURE(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find('\x1b') == std::string::npos);
  CHECK(r.err.find("cannot probe a\\x1b]0;pwned\\x07x:1") != std::string::npos);
  r = ngxtls_in(dir.path(), {std::string("frob\x1b[2Jnicate")});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find('\x1b') == std::string::npos);
  CHECK(r.err.find("unknown command \"frob\\x1b[2Jnicate\"") != std::string::npos);
  // CLI11's own messages quote the flag value.
  for (const char* flag : {"--format", "--nginx-version"}) {
    CAPTURE(flag);
    r = ngxtls_in(dir.path(), {"lint", "n.conf", flag, std::string("x\x1b[2J")});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find('\x1b') == std::string::npos);
    CHECK(r.err.find("x\\x1b[2J") != std::string::npos);
  }
}

TEST_CASE("--fix with a --format other than text, and --fix=write on stdin, are usage errors") {
  temp_dir dir;
  dir.write("n.conf", tickets_off);
  for (const std::string& format : report::format_names(report::command::lint)) {
    if (format == "text") continue;  // --fix prints its diff as text
    auto r = ngxtls_in(
        dir.path(), {"lint", "n.conf", "--nginx-version", "1.22.1", "--fix", "--format", format});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--fix prints a diff or writes the files; it takes no --format") !=
          std::string::npos);
    CHECK(r.out.empty());
  }
  // Refused whether or not the config has anything to fix.
  for (const char* conf : {"events {}\nhttp {\n}\n", tickets_off}) {
    auto r = ngxtls_in(dir.path(), {"lint", "-", "--nginx-version", "1.22.1", "--fix=write"}, conf);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--fix=write cannot write a fix back to stdin") != std::string::npos);
  }
}

TEST_CASE("a .ngxtls.toml found that is no regular file is named in a warning, not passed over") {
  temp_dir dir;
  fs::create_directory(dir.path() / ".git");  // the search ends here
  dir.write("n.conf", tickets_off);
  // A parent's file that must not be picked up instead: it would silence the finding.
  const fs::path sub = dir.path() / "sub";
  fs::create_directory(sub);
  fs::copy_file(dir.path() / "n.conf", sub / "n.conf");
  dir.write(".ngxtls.toml", "ignore = [\"tls13-resumption-disabled\"]\n");
  struct shape {
    std::string what;
    std::function<void(const fs::path&)> make;
  };
  const std::vector<shape> shapes = {
      {"a FIFO, not a regular file",
       [](const fs::path& p) { REQUIRE(::mkfifo(p.c_str(), 0600) == 0); }},
      {"a directory, not a file", [](const fs::path& p) { fs::create_directory(p); }},
      {"a symlink to nothing",
       [](const fs::path& p) { fs::create_symlink(p.parent_path() / "gone", p); }},
  };
  for (const auto& s : shapes) {
    CAPTURE(s.what);
    const fs::path planted = sub / ".ngxtls.toml";
    fs::remove_all(planted);
    s.make(planted);
    auto r = ngxtls_in(sub, {"lint", "n.conf", "--nginx-version", "1.22.1"});
    CHECK(r.exit_code == 1);  // the finding is reported: the parent's file was not used
    CHECK(r.out.find("[tls13-resumption-disabled]") != std::string::npos);
    CHECK(r.err.find("ngxtls: warning: ignoring " + planted.string() + ": " + s.what) !=
          std::string::npos);
  }
}

TEST_CASE("duplicate probe targets are probed once and give one Prometheus series per target") {
  // Port 1 on loopback refuses at once: the target is not up (exit 3), and still has a series.
  auto r = run({ngxtls_binary(), "probe", "127.0.0.1:1", "127.0.0.2:1", "127.0.0.1:1", "--format",
                "prometheus", "--timeout", "2000", "-n", "1"});
  CAPTURE(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("ngxtls: 1 duplicate target ignored: each target is probed once") !=
        std::string::npos);
  std::size_t series = 0, pos = 0;
  while ((pos = r.out.find("ngxtls_probe_success{target=\"127.0.0.1:1\"}", pos)) !=
         std::string::npos)
    ++series, ++pos;
  CHECK(series == 1);
  // First occurrence order is kept.
  CHECK(r.out.find("target=\"127.0.0.1:1\"") < r.out.find("target=\"127.0.0.2:1\""));
}

TEST_CASE(".ngxtls.toml owned by another user or writable by others is ignored, and said so") {
  temp_dir dir;
  const fs::path shared = dir.path() / "shared";
  fs::create_directories(shared / "work");
  fs::permissions(shared, fs::perms(01777));
  const fs::path planted = shared / ".ngxtls.toml";
  std::ofstream(planted) << "ignore = [\"tls13-resumption-disabled\"]\n";
  const fs::path conf = dir.write("shared/work/n.conf", tickets_off);
  const std::vector<std::string> args = {"lint",   "n.conf",   "--nginx-version",
                                         "1.22.1", "--format", "json"};

  // Owned by root and not writable by others: used, and named on stderr and in the JSON.
  auto r = ngxtls_in(shared / "work", args);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("ngxtls: using config " + planted.string()) != std::string::npos);
  CHECK(nlohmann::json::parse(r.out)["project_config"] == planted.string());
  r = ngxtls_in(shared / "work",
                {"lint", "n.conf", "--nginx-version", "1.22.1", "--format", "sarif"});
  CHECK(nlohmann::json::parse(r.out)["runs"][0]["properties"]["project_config"] ==
        planted.string());
  r = ngxtls_in(shared / "work", {"harden", "--nginx-version", "1.22.1", "--openssl-version", "3.0",
                                  "--format", "json"});
  CHECK(r.err.find("ngxtls: using config " + planted.string()) != std::string::npos);
  CHECK(nlohmann::json::parse(r.out)["project_config"] == planted.string());

  // Planted by uid 65534.
  REQUIRE(::chown(planted.c_str(), 65534, 65534) == 0);
  r = ngxtls_in(shared / "work", args);
  CAPTURE(r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("ngxtls: warning: ignoring " + planted.string() +
                   ": the file is owned by uid 65534") != std::string::npos);
  CHECK(r.err.find("using config") == std::string::npos);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["project_config"].is_null());
  CHECK(j["findings"].size() >= 1);
  // harden and check read it too: harden says the same.
  r = ngxtls_in(shared / "work",
                {"harden", "--nginx-version", "1.22.1", "--openssl-version", "3.0"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("ngxtls: warning: ignoring " + planted.string()) != std::string::npos);

  // Owned by root but writable by others.
  REQUIRE(::chown(planted.c_str(), 0, 0) == 0);
  fs::permissions(planted, fs::perms(0666));
  r = ngxtls_in(shared / "work", args);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("the file is writable by others (mode 0666)") != std::string::npos);

  // A trusted file in a directory others can write to (not sticky): anyone could swap it.
  fs::permissions(planted, fs::perms(0644));
  fs::permissions(shared, fs::perms(0777));
  r = ngxtls_in(shared / "work", args);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("its directory is writable by others (mode 0777)") != std::string::npos);
  fs::permissions(shared, fs::perms(01777));

  // A symlink (mode 0777 as every symlink) to a trusted file is used; to an untrusted one not.
  fs::rename(planted, shared / "real.toml");
  fs::create_symlink(shared / "real.toml", planted);
  r = ngxtls_in(shared / "work", args);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("ngxtls: using config " + planted.string()) != std::string::npos);
  REQUIRE(::chown((shared / "real.toml").c_str(), 65534, 65534) == 0);
  r = ngxtls_in(shared / "work", args);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("the file it links to is owned by uid 65534") != std::string::npos);
  fs::remove(planted);
  fs::rename(shared / "real.toml", planted);
  REQUIRE(::chown(planted.c_str(), 0, 0) == 0);

  // The search stops at a repository root: a file above it is not the project's.
  fs::create_directories(shared / "work" / ".git");
  r = ngxtls_in(shared / "work", args);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(".ngxtls.toml") == std::string::npos);
  fs::remove(shared / "work" / ".git");
  // ... and at the user's home.
  r = run({"sh", "-c",
           "cd '" + (shared / "work").string() + "' && HOME='" + (shared / "work").string() +
               "' exec '" + ngxtls_binary() + "' lint n.conf --nginx-version 1.22.1"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(".ngxtls.toml") == std::string::npos);
  (void)conf;
}

TEST_CASE("an empty or comment-only main config is an empty-config error, not a clean pass") {
  temp_dir dir;
  for (const std::string text : {"", "\n\n", "# only a comment\n# and another\n"}) {
    dir.write("n.conf", text);
    auto r = ngxtls_in(dir.path(), {"lint", "n.conf", "--nginx-version", "1.22.1"});
    CAPTURE(r.out);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("n.conf:1:1: error [empty-config]") != std::string::npos);
  }
  // On stdin: comments only (white space only is already an input error).
  auto r = ngxtls_in(dir.path(), {"lint", "-", "--nginx-version", "1.22.1"}, "# nothing\n");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("<stdin>:1:1: error [empty-config]") != std::string::npos);
  // The real nginx agrees that the file is not a configuration it can run.
  dir.write("n.conf", "# only a comment\n");
  const std::string p = dir.path().string() + "/";
  auto t = run_nginx({"/usr/sbin/nginx", "-t", "-p", p, "-c", p + "n.conf", "-e", p + "error.log",
                      "-g", "pid " + p + "n.pid;"});
  CHECK(t.exit_code == 1);
  CHECK(t.err.find("no \"events\" section in configuration") != std::string::npos);
}

TEST_CASE("an include glob into an unreadable directory is an include-dir-unreadable warning") {
  temp_dir dir;
  fs::permissions(dir.path(), fs::perms(0755));
  dir.write("nginx.conf", "events {}\nhttp {\n    include conf.d/*.conf;\n}\n");
  dir.write("conf.d/a.conf",
            "server {\n    listen 443 ssl;\n    ssl_protocols TLSv1.3;\n    ssl_session_tickets "
            "off;\n}\n");
  fs::permissions(dir.path() / "conf.d" / "a.conf", fs::perms(0644));
  // Root reads everything: run as nobody, as a CI user would.
  auto as_nobody = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                     ngxtls_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  };
  const std::string conf = (dir.path() / "nginx.conf").string();
  fs::permissions(dir.path() / "conf.d", fs::perms(0755));
  auto r = as_nobody({"lint", conf, "--nginx-version", "1.22.1"});
  CAPTURE(r.out);
  CAPTURE(r.err);
  CHECK(r.out.find("[tls13-resumption-disabled]") != std::string::npos);
  CHECK(r.out.find("[include-dir-unreadable]") == std::string::npos);
  for (auto mode : {fs::perms(0311), fs::perms(0000)}) {
    fs::permissions(dir.path() / "conf.d", mode);
    r = as_nobody({"lint", conf, "--nginx-version", "1.22.1"});
    CHECK(r.exit_code == 1);
    CHECK(
        r.out.find(conf +
                   ":3:5: warning [include-dir-unreadable] the include cannot read the directory " +
                   (dir.path() / "conf.d").string() + " (Permission denied)") != std::string::npos);
    CHECK(r.out.find("[tls13-resumption-disabled]") == std::string::npos);
  }
  fs::permissions(dir.path() / "conf.d", fs::perms(0755));
}

TEST_CASE(".ngxtls.toml is read bounded: deep nesting, long dotted keys, size, FIFOs and devices") {
  temp_dir dir;
  const fs::path conf = dir.write("n.conf", tickets_off);
  const fs::path toml = dir.path() / "project.toml";
  auto lint_with = [&](const std::string& project) {
    return run(
        {ngxtls_binary(), "lint", conf.string(), "--nginx-version", "1.22.1", "--config", project},
        "", 60);
  };
  auto expect_error = [&](const std::string& text, const std::string& message) {
    std::ofstream(toml, std::ios::trunc) << text;
    auto r = lint_with(toml.string());
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("ngxtls: error: " + toml.string() + message) != std::string::npos);
  };
  // The TOML parser recurses once per level: 20,000 levels (40 KB) overflowed its stack.
  expect_error("a = " + std::string(20000, '[') + std::string(20000, ']') + "\n",
               ":1:37: arrays and inline tables nested deeper than the limit of 32 "
               "(max_project_config_nesting)");
  std::string inline_tables = "a = ";
  for (int i = 0; i < 5000; ++i) inline_tables += "{x=";
  inline_tables += "1" + std::string(5000, '}') + "\n";
  expect_error(inline_tables,
               ":1:101: arrays and inline tables nested deeper than the limit of 32");
  std::string dotted = "a";
  for (int i = 0; i < 5000; ++i) dotted += ".a";
  expect_error(dotted + " = 1\n", ":1:64: a dotted key or table header nested deeper");
  expect_error("[" + dotted + "]\n", ":1:65: a dotted key or table header nested deeper");
  // Its time grows with the square of an array's length: 4 MB of one array took minutes.
  expect_error("x = [" + std::string(70000, '1') + "]\n",
               ": larger than the limit of 65536 bytes (max_project_config_bytes)");
  // Never a blocking read, never an endless one.
  const fs::path fifo = dir.path() / "fifo.toml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto r = lint_with(fifo.string());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(fifo.string() + ": not a regular file (a FIFO)") != std::string::npos);
  r = lint_with("/dev/zero");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("/dev/zero: not a regular file (a character device)") != std::string::npos);
  r = lint_with(dir.path().string());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(dir.path().string() + ": Is a directory") != std::string::npos);
  // Brackets, dots and braces inside strings and comments are not structure.
  std::ofstream(toml, std::ios::trunc)
      << "nginx_version = \"1.22.1\" # a.b.c [[[[ {{{{\n"
         "ignore = ['x[[[[{{{{.y', \"\"\"a.b.c.d\n[[[[\"\"\"]\n"
         "[severity]\n\"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f.g\" = 1\n";
  r = lint_with(toml.string());
  CAPTURE(r.err);
  CHECK(r.exit_code == 2);
  // The scan let it through to the parser, which read the quoted key as one key.
  CHECK(r.err.find(
            ":5:71: unknown key \"severity.a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z."
            "a.b.c.d.e.f.g\"") != std::string::npos);
}
