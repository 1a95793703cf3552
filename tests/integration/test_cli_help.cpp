// A command line that helps a person: "did you mean" for a mistyped subcommand, flag or rule
// id, --color, the .ngxtls.toml key messages, the probe gate (--fail-under), the shell
// completions from the live catalog, and the man page's sections.

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "probe_util.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using namespace ngxtls::test;

namespace {

command_result ngxtls_run(std::vector<std::string> args, int timeout_s = 60) {
  args.insert(args.begin(), ngxtls_binary());
  return run(args, "", timeout_s);
}

// A config with one warning that has a fix (session-timeout-too-long).
std::string warning_conf(const temp_dir& d) {
  return d
      .write("nginx.conf",
             "events {}\nhttp {\n  server {\n    listen 443 ssl;\n    ssl_session_timeout 3d;\n"
             "  }\n}\n")
      .string();
}

}  // namespace

TEST_CASE("a mistyped subcommand, flag or rule id gets a did-you-mean") {
  auto sub = ngxtls_run({"lnit", "x.conf"});
  CHECK(sub.exit_code == 2);
  CHECK(sub.err.find("unknown command \"lnit\" (did you mean \"lint\"?)") != std::string::npos);

  temp_dir d;
  const std::string conf = warning_conf(d);
  auto flag = ngxtls_run({"lint", conf, "--formt", "json"});
  CHECK(flag.exit_code == 2);
  CHECK(flag.err.find("unknown option --formt of lint: did you mean --format?") !=
        std::string::npos);

  auto select = ngxtls_run({"lint", conf, "--select", "weak-cipher"});
  CHECK(select.exit_code == 2);
  CHECK(select.err.find("unknown rule \"weak-cipher\" (did you mean \"weak-ciphers\"?)") !=
        std::string::npos);
  auto rule = ngxtls_run({"rules", "tls13-resumption-disabeld"});
  CHECK(rule.exit_code == 2);
  CHECK(rule.err.find("(did you mean \"tls13-resumption-disabled\"?)") != std::string::npos);
  // Nothing near: no guess.
  auto far = ngxtls_run({"rules", "zzzzzzzzzzzz"});
  CHECK(far.err.find("did you mean") == std::string::npos);
}

TEST_CASE("--color always colors a pipe, never and NO_COLOR do not color a terminal") {
  temp_dir d;
  const std::string conf = warning_conf(d);
  const std::vector<std::string> base = {"lint",   conf,        "--nginx-version",
                                         "1.22.1", "--fail-on", "never"};
  auto args = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  CHECK(ngxtls_run(args({"--color", "always"})).out.find("\x1b[") != std::string::npos);
  CHECK(ngxtls_run(args({})).out.find("\x1b[") == std::string::npos);
  auto bad = ngxtls_run(args({"--color", "sometimes"}));
  CHECK(bad.exit_code == 2);
  // On a terminal (script(1) gives the command one): auto colors, unless NO_COLOR or never.
  auto on_tty = [&](const std::string& env, const std::string& extra) {
    std::string cmd = env + " '" + ngxtls_binary() + "' lint '" + conf +
                      "' --nginx-version 1.22.1 --fail-on never " + extra;
    return run({"script", "-qec", cmd, "/dev/null"}, "", 60).out;
  };
  CHECK(on_tty("env -u NO_COLOR", "").find("\x1b[") != std::string::npos);
  CHECK(on_tty("env NO_COLOR=1", "").find("\x1b[") == std::string::npos);
  CHECK(on_tty("env -u NO_COLOR", "--color never").find("\x1b[") == std::string::npos);
  CHECK(on_tty("env NO_COLOR=1", "--color always").find("\x1b[") != std::string::npos);
}

TEST_CASE(".ngxtls.toml says unknown key for a key that is no rule id, with a guess") {
  temp_dir d;
  const std::string conf = warning_conf(d);
  d.write(".ngxtls.toml", "[severity]\ndefault = \"note\"\n");
  auto r = run({"/bin/sh", "-c", "cd \"$0\" && exec \"$1\" lint nginx.conf", d.path().string(),
                ngxtls_binary()},
               "", 60);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("unknown key \"severity.default\": [severity] keys are rule ids") !=
        std::string::npos);
  CHECK(r.err.find("unknown rule") == std::string::npos);
  d.write(".ngxtls.toml", "nginx_verison = \"1.22.1\"\n");
  r = run({"/bin/sh", "-c", "cd \"$0\" && exec \"$1\" lint nginx.conf", d.path().string(),
           ngxtls_binary()},
          "", 60);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("unknown key \"nginx_verison\" (did you mean \"nginx_version\"?)") !=
        std::string::npos);
}

TEST_CASE("probe --fail-under exits 1 when a run resumes less often, 0 when every run resumes") {
  temp_dir dir;
  const tls::pki_paths pki = tls::make_pki((dir.path() / "pki").string(), {});
  const int good_port = free_port(), bad_port = free_port();
  nginx_options opts;
  opts.wait_ports = {good_port, bad_port};
  // docs/nginx-facts.md#tickets-off-tls13 and #session-id-cache: tickets off without a session
  // cache resumes nothing; a shared cache
  // with tickets resumes every TLS 1.3 and TLS 1.2 attempt.
  nginx_instance ngx(nginx_conf(1, tls_server(good_port, pki, "ssl_session_cache shared:T:1m;") +
                                       tls_server(bad_port, pki, "ssl_session_tickets off;")),
                     opts);
  auto good = ngxtls_run({"probe", "127.0.0.1:" + std::to_string(good_port), "-n", "5", "--no-ocsp",
                          "--fail-under", "0.9"},
                         120);
  INFO(good.out << good.err);
  CHECK(good.exit_code == 0);
  auto bad = ngxtls_run({"probe", "127.0.0.1:" + std::to_string(bad_port), "-n", "5", "--no-ocsp",
                         "--fail-under", "0.9"},
                        120);
  INFO(bad.out << bad.err);
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("TLS 1.3: 0 of 5 resumed (0%), below --fail-under 0.9") != std::string::npos);
  CHECK(ngxtls_run({"probe", "127.0.0.1:1", "--fail-under", "1.5"}).exit_code == 2);
}

TEST_CASE("ngxtls completion writes bash, zsh and fish scripts with the live rule ids") {
  auto rules = ngxtls_run({"rules"});
  REQUIRE(rules.exit_code == 0);
  std::vector<std::string> ids;
  std::istringstream in(rules.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) ids.push_back(line.substr(0, line.find(' ')));
  REQUIRE(ids.size() >= 25);
  temp_dir d;
  const auto bash = d.write("ngxtls.bash", ngxtls_run({"completion", "bash"}).out);
  auto complete = [&](const std::string& words, int cword) {
    auto r = run({"/bin/bash", "-c",
                  "source \"$0\"; COMP_WORDS=(" + words + "); COMP_CWORD=" + std::to_string(cword) +
                      "; _ngxtls; printf '%s\\n' \"${COMPREPLY[@]}\"",
                  bash.string()},
                 "", 30);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return r.out;
  };
  CHECK(complete("ngxtls comp", 1) == "completion\n");
  CHECK(complete("ngxtls lint --select weak-c", 3) == "weak-ciphers\n");
  CHECK(complete("ngxtls lint --ignore tls13-missing,weak-k", 3) == "tls13-missing,weak-key\n");
  CHECK(complete("ngxtls rules tls13-r", 2) == "tls13-resumption-disabled\n");
  CHECK(complete("ngxtls lint --color ''", 3) == "auto\nalways\nnever\n");
  CHECK(complete("ngxtls completion ''", 2).find("fish") != std::string::npos);

  // fish's own completer, on the script ngxtls wrote.
  if (run({"sh", "-c", "command -v fish"}, "", 10).exit_code == 0) {
    const auto fish = d.write("ngxtls.fish", ngxtls_run({"completion", "fish"}).out);
    auto f = run({"fish", "--no-config", "-c",
                  "source " + fish.string() + "; complete -C 'ngxtls lint --form'"},
                 "", 30);
    CHECK_MESSAGE(f.out.find("--format") != std::string::npos, (f.out + f.err));
    f = run({"fish", "--no-config", "-c",
             "source " + fish.string() + "; complete -C 'ngxtls rules weak-k'"},
            "", 30);
    CHECK_MESSAGE(f.out.find("weak-key") != std::string::npos, (f.out + f.err));
    f = run({"fish", "--no-config", "-c", "source " + fish.string() + "; complete -C 'ngxtls ha'"},
            "", 30);
    CHECK(f.out.find("harden") != std::string::npos);
  } else {
    MESSAGE("fish is not installed: its completer is not run");
  }
  // zsh reads the script without a syntax error, and it names every rule id.
  const std::string zsh = ngxtls_run({"completion", "zsh"}).out;
  for (const auto& id : ids) CHECK(zsh.find(id) != std::string::npos);
  if (run({"sh", "-c", "command -v zsh"}, "", 10).exit_code == 0) {
    const auto file = d.write("_ngxtls", zsh);
    auto z = run({"zsh", "-n", file.string()}, "", 30);
    CHECK_MESSAGE(z.exit_code == 0, z.err);
  }
  CHECK(ngxtls_run({"completion", "tcsh"}).exit_code == 2);
}

TEST_CASE("the man page has EXAMPLES, ENVIRONMENT and every exit code of docs/exit-codes.md") {
  const fs::path man = fs::path(ngxtls_binary()).parent_path() / "cli-docs" / "ngxtls.1";
  if (!fs::exists(man)) return skip_test("this build made no man page (no python3)");
  const std::string text = read_file(man);
  for (const char* section : {".SH EXAMPLES", ".SH ENVIRONMENT", ".SH EXIT STATUS"})
    CHECK(text.find(section) != std::string::npos);
  CHECK(text.find("NO_COLOR") != std::string::npos);
  // Every code in the table of docs/exit-codes.md.
  const std::string doc = read_file(source_dir() / "docs" / "exit-codes.md");
  std::set<std::string> codes;
  static const std::regex row(R"(\n\| (\d+) \|)");
  for (std::sregex_iterator it(doc.begin(), doc.end(), row), end; it != end; ++it)
    codes.insert((*it)[1]);
  CHECK(codes.count("130") == 1);
  for (const auto& c : codes) {
    CAPTURE(c);
    CHECK(text.find(".TP\n\\fB" + c + "\\fR\n") != std::string::npos);
  }
  // man(1) renders it without a warning.
  if (run({"sh", "-c", "command -v man"}, "", 10).exit_code == 0) {
    auto m = run({"/usr/bin/env", "MANWIDTH=100", "man", "--warnings", "-l", man.string()}, "", 60);
    CHECK(m.out.find("EXAMPLES") != std::string::npos);
    CHECK_MESSAGE(m.err.empty(), m.err);
  }
}

TEST_CASE("SIGTERM ends a run with 143, as the man page says") {
  // lint - waits for stdin, which stays open: SIGTERM lands while it reads.
  auto r = run({"/bin/sh", "-c",
                "sleep 3 | { exec 3<&0; \"$0\" lint - <&3 & p=$!; sleep 1; kill -TERM $p; "
                "wait $p; echo rc=$?; }",
                ngxtls_binary()},
               "", 60);
  CHECK(r.out.find("rc=143") != std::string::npos);
}

TEST_CASE("lint of several files counts them on a terminal's stderr, and says nothing otherwise") {
  temp_dir d;
  const std::string a = warning_conf(d);
  const std::string b = d.write("b.conf", "events {}\nhttp {}\n").string();
  auto piped = ngxtls_run({"lint", a, b, "--nginx-version", "1.22.1", "--fail-on", "never"});
  CHECK(piped.err.find("inputs") == std::string::npos);
  auto tty = run({"script", "-qec",
                  "'" + ngxtls_binary() + "' lint '" + a + "' '" + b +
                      "' --nginx-version 1.22.1 --fail-on never",
                  "/dev/null"},
                 "", 60);
  CHECK(tty.out.find("ngxtls: read 2/2 inputs") != std::string::npos);
  CHECK(tty.out.find("ngxtls: linted 2/2 inputs") != std::string::npos);
}
