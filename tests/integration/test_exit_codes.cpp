// docs/exit-codes.md, path by path, through the real binary: 0 ok, 1 findings at or above
// --fail-on, 2 usage or input error, 3 a target could not be probed. Every failure also has a
// clear `ngxtls: error:` (or CLI11) message on stderr, never a crash or "terminate called".

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "probe_util.hpp"
#include "report/format.hpp"
#include "support/nginx_instance.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

command_result ngxtls_run(std::vector<std::string> args, const std::string& input = "",
                          int timeout_s = 60) {
  args.insert(args.begin(), ngxtls_binary());
  return run(args, input, timeout_s);
}

/// The exit code is `code`, stderr holds `message`, and nothing crashed.
void expect(const command_result& r, int code, const std::string& message) {
  CAPTURE(r.out);
  CAPTURE(r.err);
  CHECK(r.exit_code == code);
  CHECK(r.err.find(message) != std::string::npos);
  CHECK(r.err.find("terminate called") == std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
  CHECK(r.err.find("what():") == std::string::npos);
}

const char* clean_conf = "events {}\nhttp {\n}\n";

// tls13-resumption-disabled (an error) and notes.
const char* tickets_off = R"(events {}
http {
    server {
        listen 443 ssl;
        ssl_protocols TLSv1.3;
        ssl_session_tickets off;
    }
}
)";

struct live_nginx {
  temp_dir dir;
  tls::pki_paths pki = tls::make_pki((dir.path() / "pki").string(), {});
  int port = free_port();
  std::unique_ptr<nginx_instance> ngx;
  live_nginx() {
    nginx_options no;
    no.wait_ports = {port};
    ngx = std::make_unique<nginx_instance>(
        nginx_conf(1, tls_server(port, pki, "ssl_session_cache shared:S:1m;")), no);
  }
  std::string target() const { return "127.0.0.1:" + std::to_string(port); }
};

}  // namespace

TEST_CASE(
    "no subcommand, an unknown subcommand or flag is a usage error (2), --help and --version are "
    "0") {
  expect(ngxtls_run({}), 2, "A subcommand is required");  // CLI11's words
  expect(ngxtls_run({"frobnicate"}), 2,
         "ngxtls: error: unknown command \"frobnicate\" (commands: lint, parse");
  expect(ngxtls_run({"lint", "--bogus", "x.conf"}), 2, "--bogus");
  auto r = ngxtls_run({"--version"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("ngxtls ") == 0);
  CHECK(ngxtls_run({"--help"}).exit_code == 0);
  CHECK(ngxtls_run({"lint", "--help"}).exit_code == 0);
}

TEST_CASE("lint: every failure path and its exit code") {
  temp_dir t;
  const std::string clean = t.write("clean.conf", clean_conf).string();
  const std::string findings = t.write("findings.conf", tickets_off).string();
  const std::string v = "--nginx-version";
  const std::string nv = "1.22.1";

  SUBCASE("ok and findings against --fail-on") {
    CHECK(ngxtls_run({"lint", clean, v, nv}).exit_code == 0);
    auto r = ngxtls_run({"lint", findings, v, nv});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("terminate called") == std::string::npos);
    CHECK(ngxtls_run({"lint", findings, v, nv, "--fail-on", "never"}).exit_code == 0);
    CHECK(ngxtls_run({"lint", findings, v, nv, "--fail-on", "note"}).exit_code == 1);
    // The config with tickets off on TLS 1.3 and no cache: the resumption finding is an error.
    CHECK(ngxtls_run({"lint", findings, v, nv, "--fail-on", "error"}).exit_code == 1);
    // A warning-only finding set under --fail-on error is 0.
    const std::string warn_only =
        t.write("warn.conf",
                "events {}\nhttp {\n server {\n  listen 443 ssl;\n"
                "  ssl_protocols TLSv1.2 TLSv1.3;\n  ssl_session_timeout 7d;\n"
                "  ssl_session_cache shared:S:10m;\n  ssl_session_tickets off;\n }\n}\n")
            .string();
    auto w = ngxtls_run({"lint", warn_only, v, nv, "--format", "json", "--fail-on", "never"});
    REQUIRE(w.exit_code == 0);
    auto j = nlohmann::json::parse(w.out);
    bool any_error = false, any = false;
    for (const auto& f : j.at("findings")) {
      any = true;
      any_error = any_error || f.at("severity") == "error";
    }
    if (any && !any_error)
      CHECK(ngxtls_run({"lint", warn_only, v, nv, "--fail-on", "error"}).exit_code == 0);
  }
  SUBCASE("missing file") {
    expect(ngxtls_run({"lint", (t.path() / "nope.conf").string(), v, nv}), 2,
           "ngxtls: error: " + (t.path() / "nope.conf").string() + ": open() \"" +
               (t.path() / "nope.conf").string() + "\" failed (2: No such file or directory)");
  }
  SUBCASE("no path, stdin twice, empty stdin") {
    expect(ngxtls_run({"lint", v, nv}), 2, "name a config file");
    expect(ngxtls_run({"lint", "-", "-", v, nv}), 2, "stdin (-) can be read once");
    expect(ngxtls_run({"lint", "-", v, nv}, ""), 2, "empty input");
  }
  SUBCASE("syntax error") {
    const std::string bad = t.write("bad.conf", "events {}\n}\n").string();
    expect(ngxtls_run({"lint", bad, v, nv}), 2, "ngxtls: error: " + bad + ":2:1: unexpected \"}\"");
    expect(ngxtls_run({"lint", "-", v, nv}, "http {\n"), 2, "unexpected end of file");
  }
  SUBCASE("include cycle") {
    const std::string a = t.write("a.conf", "include b.conf;\n").string();
    t.write("b.conf", "include a.conf;\n");
    expect(ngxtls_run({"lint", a, v, nv}), 2, "include cycle");
  }
  SUBCASE("missing literal include") {
    const std::string a = t.write("inc.conf", "include missing.conf;\n").string();
    expect(ngxtls_run({"lint", a, v, nv}), 2,
           "missing.conf\" failed (2: No such file or directory)");
  }
  SUBCASE("bad flags and flag values") {
    expect(ngxtls_run({"lint", clean, "--select", "no-such-rule", v, nv}), 2,
           "--select: unknown rule \"no-such-rule\"");
    expect(ngxtls_run({"lint", clean, "--ignore", "no-such-rule", v, nv}), 2,
           "--ignore: unknown rule \"no-such-rule\"");
    expect(ngxtls_run({"lint", clean, "--fail-on", "sometimes", v, nv}), 2, "--fail-on");
    expect(ngxtls_run({"lint", clean, "--format", "xml", v, nv}), 2, "--format");
    expect(ngxtls_run({"lint", clean, v, "banana"}), 2, "cannot read nginx version \"banana\"");
    expect(ngxtls_run({"lint", clean, v, nv, "--openssl-version", "x.y"}), 2,
           "cannot read OpenSSL version");
    expect(ngxtls_run({"lint", clean, v, nv, "--config", (t.path() / "none.toml").string()}), 2,
           "none.toml");
    // A version is read whole: "banana2" is not nginx 2.0.0, "" is not "not given".
    expect(ngxtls_run({"lint", clean, v, "banana2"}), 2, "cannot read nginx version \"banana2\"");
    expect(ngxtls_run({"lint", clean, v, ""}), 2, "cannot read nginx version \"\"");
    expect(ngxtls_run({"lint", clean, v, nv, "--openssl-version", "-1"}), 2,
           "cannot read OpenSSL version \"-1\"");
    expect(ngxtls_run({"check", clean, "--sandbox", v, "1.x"}), 2,
           "cannot read nginx version \"1.x\"");
    expect(ngxtls_run({"harden", v, ""}), 2, "cannot read nginx version \"\"");
  }
  SUBCASE("a version in .ngxtls.toml that cannot be read") {
    // An empty or mistyped version in the file is an error at its line and column: it was
    // taken as garbage (an empty optional read as a version) or as another version.
    const std::string empty_nginx = t.write("empty.toml", "nginx_version = \"\"\n").string();
    expect(ngxtls_run({"lint", clean, "--config", empty_nginx}), 2,
           empty_nginx + ":1:17: cannot read nginx version \"\"");
    expect(ngxtls_run({"harden", "--config", empty_nginx}), 2,
           empty_nginx + ":1:17: cannot read nginx version \"\"");
    const std::string bad_openssl =
        t.write("openssl.toml", "nginx_version = \"1.22.1\"\nopenssl_version = \"x3\"\n").string();
    expect(ngxtls_run({"lint", clean, "--config", bad_openssl}), 2,
           bad_openssl + ":2:19: cannot read OpenSSL version \"x3\"");
    const std::string banana = t.write("banana.toml", "nginx_version = \"banana\"\n").string();
    expect(ngxtls_run({"check", clean, "--sandbox", "--config", banana}), 2,
           banana + ":1:17: cannot read nginx version \"banana\"");
  }
  SUBCASE("output file that cannot be written") {
    for (const std::string& fmt : report::format_names(report::command::lint)) {
      CAPTURE(fmt);
      expect(ngxtls_run({"lint", findings, v, nv, "--format", fmt, "-o", "/nonexistent/dir/x"}), 2,
             "ngxtls: error: cannot write /nonexistent/dir/x: No such file or directory");
    }
  }
  SUBCASE("--fix=write on stdin") {
    expect(ngxtls_run({"lint", "-", v, nv, "--fix=write"}, tickets_off), 2,
           "lint: --fix=write cannot write a fix back to stdin (-)");
  }
}

TEST_CASE("parse: every failure path and its exit code") {
  temp_dir t;
  const std::string clean = t.write("clean.conf", clean_conf).string();
  CHECK(ngxtls_run({"parse", clean}).exit_code == 0);
  CHECK(ngxtls_run({"parse", clean, "--format", "crossplane"}).exit_code == 0);
  expect(ngxtls_run({"parse", (t.path() / "nope.conf").string()}), 2, "No such file or directory");
  expect(ngxtls_run({"parse", t.write("bad.conf", "http {\n").string()}), 2,
         "unexpected end of file");
  expect(ngxtls_run({"parse", clean, "--format", "yaml"}), 2, "--format");
  expect(ngxtls_run({"parse"}), 2, "path is required");
  const std::string a = t.write("a.conf", "include a.conf;\n").string();
  expect(ngxtls_run({"parse", a}), 2, "include cycle");
}

TEST_CASE("probe: usage errors are 2, unreachable targets 3") {
  temp_dir t;
  const int closed = free_port();
  const std::string closed_target = "127.0.0.1:" + std::to_string(closed);
  SUBCASE("refused port") {
    expect(ngxtls_run({"probe", closed_target, "-n", "1", "--no-ocsp"}), 3,
           "ngxtls: error: cannot probe " + closed_target + ": TCP connect to " + closed_target +
               " failed: Connection refused");
    // JSON and Prometheus output still come out, and the exit code is still 3.
    auto r = ngxtls_run({"probe", closed_target, "-n", "1", "--no-ocsp", "--format", "json"});
    CHECK(r.exit_code == 3);
    CHECK(nlohmann::json::parse(r.out).at("targets").at(0).at("error").is_string());
    CHECK(ngxtls_run({"probe", closed_target, "-n", "1", "--no-ocsp", "--format", "prometheus"})
              .exit_code == 3);
  }
  SUBCASE("unresolvable host") {
    expect(ngxtls_run({"probe", "no-such-host.invalid", "-n", "1", "--no-ocsp"}), 3,
           "cannot probe no-such-host.invalid: cannot resolve \"no-such-host.invalid\"");
  }
  SUBCASE("bad target syntax") {
    expect(ngxtls_run({"probe", "localhost:99999"}), 2, "bad port in target \"localhost:99999\"");
    expect(ngxtls_run({"probe", "[::1"}), 2, "missing ']' in target");
    expect(ngxtls_run({"probe", "ftp://example.test/"}), 2, "unsupported scheme");
    expect(ngxtls_run({"probe", ":443"}), 2, "empty host");
  }
  SUBCASE("no target, bad numbers, --sess-out with two targets") {
    expect(ngxtls_run({"probe"}), 2, "no target given");
    expect(ngxtls_run({"probe", closed_target, "-n", "-1"}), 2, "-n must be >= 0");
    expect(ngxtls_run({"probe", closed_target, "--parallel", "0"}), 2, "--parallel");
    expect(ngxtls_run({"probe", closed_target, "--total-timeout", "0"}), 2, "--total-timeout >= 1");
    expect(ngxtls_run({"probe", closed_target, "-n", "2000000000"}), 2, "-n must be <= 1000000");
    expect(ngxtls_run({"probe", closed_target, "-n", "many"}), 2, "-n");
    // Two distinct targets: the same target twice is probed once (duplicates are dropped).
    expect(ngxtls_run({"probe", closed_target, "https://" + closed_target + "/", "--sess-out",
                       (t.path() / "s.pem").string()}),
           2, "--sess-out needs exactly one target");
    expect(ngxtls_run({"probe", closed_target, "--format", "xml"}), 2, "--format");
  }
  SUBCASE("bad --sess-in file") {
    expect(ngxtls_run({"probe", closed_target, "--sess-in", (t.path() / "none.pem").string()}), 2,
           "cannot read session file: No such file or directory");
    expect(
        ngxtls_run({"probe", closed_target, "--sess-in", t.write("junk.pem", "hello\n").string()}),
        2, "no SSL SESSION PARAMETERS block in the file");
    REQUIRE(::mkfifo((t.path() / "fifo.pem").c_str(), 0600) == 0);
    expect(
        ngxtls_run({"probe", closed_target, "--sess-in", (t.path() / "fifo.pem").string()}, "", 20),
        2, "cannot read session file: not a regular file");
    expect(ngxtls_run({"probe", closed_target, "--sess-in", "/dev/zero"}, "", 20), 2,
           "cannot read session file: not a regular file");
  }
  SUBCASE("bad --targets file") {
    expect(ngxtls_run({"probe", "--targets", (t.path() / "none.txt").string()}), 2,
           "cannot read targets file: No such file or directory");
    REQUIRE(::mkfifo((t.path() / "fifo.txt").c_str(), 0600) == 0);
    expect(ngxtls_run({"probe", "--targets", (t.path() / "fifo.txt").string()}, "", 20), 2,
           "cannot read targets file: not a regular file");
    expect(ngxtls_run({"probe", "--targets", "/dev/zero"}, "", 20), 2, "not a regular file");
    expect(ngxtls_run({"probe", "--targets", t.write("empty.txt", "# nothing\n").string()}), 2,
           "no target given");
  }
}

TEST_CASE("probe against a live nginx: 0, and --sess-out failures") {
  live_nginx n;
  temp_dir t;
  auto r = ngxtls_run({"probe", n.target(), "--sni", "localhost", "-n", "2", "--no-ocsp"});
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  // One live target and one refused: 3 (a target could not be probed).
  const std::string closed_target = "127.0.0.1:" + std::to_string(free_port());
  expect(ngxtls_run(
             {"probe", n.target(), closed_target, "--sni", "localhost", "-n", "2", "--no-ocsp"}),
         3, "cannot probe " + closed_target);
  expect(ngxtls_run({"probe", n.target(), "--sni", "localhost", "-n", "1", "--no-ocsp",
                     "--sess-out", "/nonexistent/dir/s.pem"}),
         2, "cannot write session file: No such file or directory");
  std::filesystem::create_directory(t.path() / "d");
  expect(ngxtls_run({"probe", n.target(), "--sni", "localhost", "-n", "1", "--no-ocsp",
                     "--sess-out", (t.path() / "d").string()}),
         2, "cannot write session file");
  // No session to save from a refused target: the target error (3) is what went wrong.
  expect(ngxtls_run({"probe", closed_target, "-n", "1", "--no-ocsp", "--sess-out",
                     (t.path() / "s.pem").string()}),
         3, "cannot probe " + closed_target);
}

TEST_CASE("harden: bad profile and options are 2") {
  temp_dir t;
  CHECK(
      ngxtls_run({"harden", "--nginx-version", "1.22.1", "--openssl-version", "3.0.0"}).exit_code ==
      0);
  expect(ngxtls_run({"harden", "--profile", "old"}), 2, "--profile");
  expect(ngxtls_run({"harden", "--tickets", "sometimes"}), 2, "--tickets");
  expect(ngxtls_run({"harden", "--format", "yaml"}), 2, "--format");
  expect(ngxtls_run({"harden", "--nginx-version", "x"}), 2, "cannot read nginx version");
  expect(ngxtls_run({"harden", "--expected-sessions", "0"}), 2,
         "--expected-sessions: Value 0 not in range 1 to");
  expect(ngxtls_run(
             {"harden", "--cert", (t.path() / "none.crt").string(), "--nginx-version", "1.22.1"}),
         2, "none.crt");
  expect(ngxtls_run({"harden", "--nginx-version", "1.22.1", "-o", "/nonexistent/dir/x"}), 2,
         "cannot write /nonexistent/dir/x");
}

TEST_CASE("check: missing --endpoint is 2, an unreachable endpoint 3") {
  temp_dir t;
  const std::string conf = t.write("nginx.conf", tickets_off).string();
  expect(ngxtls_run({"check", conf, "--nginx-version", "1.22.1"}), 2,
         "check: name the live endpoint with --endpoint TARGET");
  expect(ngxtls_run({"check", (t.path() / "none.conf").string(), "--endpoint", "127.0.0.1:1"}), 2,
         "No such file or directory");
  expect(ngxtls_run({"check", "--endpoint", "127.0.0.1:1"}), 2, "config is required");
  const std::string closed_target = "127.0.0.1:" + std::to_string(free_port());
  auto r = ngxtls_run({"check", conf, "--nginx-version", "1.22.1", "--endpoint", closed_target,
                       "-n", "1", "--no-ocsp"});
  CAPTURE(r.out);
  CAPTURE(r.err);
  CHECK(r.exit_code == 3);
  // The report (stdout) says which endpoint could not be probed; stderr stays empty so far.
  CHECK((r.out + r.err)
            .find(closed_target + " could not be probed: TCP connect to " + closed_target +
                  " failed: Connection refused") != std::string::npos);
  CHECK(r.err.find("terminate called") == std::string::npos);
  expect(ngxtls_run({"check", conf, "--endpoint", "bad:port:x"}), 2,
         "bad target \"bad:port:x\": more than one ':' but not an IPv6 address");
  expect(ngxtls_run({"probe", "bad:port:x"}), 2, "bad target \"bad:port:x\"");
  expect(ngxtls_run({"check", conf, "--nginx-version", "1.22.1", "--endpoint", closed_target, "-o",
                     "/nonexistent/dir/x"}),
         2, "cannot write /nonexistent/dir/x");
}

TEST_CASE("rules: an unknown id is 2") {
  CHECK(ngxtls_run({"rules"}).exit_code == 0);
  CHECK(ngxtls_run({"rules", "tls13-resumption-disabled"}).exit_code == 0);
  expect(ngxtls_run({"rules", "no-such-rule"}), 2, "unknown rule \"no-such-rule\"");
  // Not /nonexistent/dir: --write-docs creates missing directories (as root, anywhere).
  temp_dir t;
  const std::string file = t.write("file", "").string();
  expect(ngxtls_run({"rules", "--write-docs", file + "/docs"}), 2,
         "ngxtls: error: --write-docs: cannot write the rule pages into " + file + "/docs");
}
