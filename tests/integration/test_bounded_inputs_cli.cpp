// Every input is bounded while it is read, through the real binary: files named by ssl_*
// directives that are FIFOs or devices (lint, check, harden), include bombs, globs over
// self-linked trees, an endless standard input, configs with millions of findings; and an
// `nginx -T` dump made by the real nginx gives the findings of the files on disk, whatever
// their comments look like.

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/gen_config.hpp"
#include "support/fixture_env.hpp"
#include "support/nginx_run.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// A command run under /usr/bin/time: its result, wall-clock seconds and peak memory (KB).
struct measured {
  test::command_result r;
  double seconds = 0;
  long max_rss_kb = 0;
};

/// Runs `shell` (a bash command line) under /usr/bin/time; the last line of stderr is
/// time's. At most `timeout_s` seconds.
measured run_measured(const std::string& shell, int timeout_s) {
  REQUIRE(fs::exists("/usr/bin/time"));
  measured m;
  m.r = test::run({"/usr/bin/time", "-q", "-f", "ngxtls-time %e %M", "bash", "-c", shell}, "",
                  timeout_s);
  const auto at = m.r.err.rfind("ngxtls-time ");
  if (at != std::string::npos) {
    std::istringstream in(m.r.err.substr(at + 12));
    in >> m.seconds >> m.max_rss_kb;
    m.r.err.resize(at);
  }
  return m;
}

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

}  // namespace

TEST_CASE("a FIFO or device named by any ssl_* file directive is exit 2 at its file:line") {
  test::temp_dir t;
  test::make_fixture_material(t.path());
  REQUIRE(::mkfifo((t.path() / "fifo").c_str(), 0600) == 0);
  const std::string bin = test::ngxtls_binary();
  const char* directives[] = {"ssl_certificate",
                              "ssl_certificate_key",
                              "ssl_trusted_certificate",
                              "ssl_client_certificate",
                              "ssl_dhparam",
                              "ssl_session_ticket_key",
                              "ssl_stapling_file",
                              "ssl_crl",
                              "ssl_password_file"};
  const auto started = std::chrono::steady_clock::now();
  for (const std::string target : {"fifo", "/dev/zero"}) {
    for (const std::string d : directives) {
      CAPTURE(d);
      CAPTURE(target);
      // The directive under test comes after a good certificate and key, inside a server
      // reached through an include, at line 4 column 5 of site.conf.
      const std::string site =
          "server {\n    listen 127.0.0.1:1443 ssl;\n    server_name a.test;\n"
          "    " +
          d + " " + target + ";\n}\n";
      t.write("site.conf", site);
      const auto conf = t.write("nginx.conf",
                                "events {}\nhttp {\n    ssl_certificate pki/noocsp/chain.pem;\n"
                                "    ssl_certificate_key pki/noocsp/leaf.key;\n"
                                "    include site.conf;\n}\n")
                            .string();
      const std::string where = (t.path() / "site.conf").string() + ":4:5: ";
      const std::string kind = target == "fifo" ? "a FIFO" : "a character device";
      const std::string message =
          "ngxtls: error: " + where + d + " \"" + target + "\": not a regular file (" + kind + ")";
      auto lint = test::run({bin, "lint", conf, "--nginx-version", "1.22.1"}, "", 20);
      CHECK(lint.exit_code == 2);
      CHECK(lint.err.rfind(message, 0) == 0);
      CHECK(contains(lint.err, "included from " + conf + ":5:5"));
      auto check =
          test::run({bin, "check", conf, "--sandbox", "--nginx-version", "1.22.1"}, "", 20);
      CHECK(check.exit_code == 2);
      CHECK(check.err.rfind(message, 0) == 0);
    }
  }
  // harden --cert names a file on the command line: the error names the option.
  for (const std::string& target : {(t.path() / "fifo").string(), std::string("/dev/zero")}) {
    auto harden = test::run({bin, "harden", "--cert", target, "--ocsp", "auto"}, "", 20);
    CAPTURE(harden.err);
    CHECK(harden.exit_code == 2);
    CHECK(contains(harden.err, "ngxtls: error: " + target));
    CHECK(contains(harden.err, "--cert: not a regular file"));
  }
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(120));
}

TEST_CASE("an include bomb fails fast, in little memory, naming the include chain") {
  test::temp_dir t;
  // 57 files of 1.5 KB in all: file k includes file k+1 twice (2^56 expansions).
  for (int k = 0; k < 57; ++k) {
    const std::string next = "f" + std::to_string(k + 1);
    t.write("f" + std::to_string(k),
            k < 56 ? "include " + next + ";\ninclude " + next + ";\n" : std::string("x;\n"));
  }
  // 22 files holding a directive each besides the includes.
  for (int k = 0; k < 22; ++k) {
    const std::string next = "g" + std::to_string(k + 1);
    t.write("g" + std::to_string(k),
            "x" + std::to_string(k) + " on;\ninclude " + next + ";\ninclude " + next + ";\n");
  }
  t.write("g22", "y on;\n");
  for (const std::string main : {"f0", "g0"}) {
    CAPTURE(main);
    const auto m = run_measured(quoted(test::ngxtls_binary()) + " lint " +
                                    quoted((t.path() / main).string()) + " --nginx-version 1.22.1",
                                30);
    CAPTURE(m.r.err);
    MESSAGE(main << ": " << m.seconds << " s, " << m.max_rss_kb << " KB");
    CHECK(m.r.exit_code == 2);
    CHECK(contains(m.r.err,
                   "files expanded by includes, counting every include site "
                   "(max_include_expansions; an include bomb?)"));
    CHECK(contains(m.r.err, "included from " + (t.path() / main).string() + ":"));
    CHECK(m.seconds < 10);
    CHECK(m.max_rss_kb < 400 * 1024);
  }
}

TEST_CASE("a glob over 12 self-linked directories stops early with max_glob_entries") {
  test::temp_dir t;
  fs::create_directory(t.path() / "d");
  for (int i = 0; i < 12; ++i)
    fs::create_directory_symlink(".", t.path() / "d" / ("s" + std::to_string(i)));
  const auto conf = t.write("nginx.conf", "include d/*/*/*/*/*/*/*.conf;\n").string();
  const auto m = run_measured(
      quoted(test::ngxtls_binary()) + " lint " + quoted(conf) + " --nginx-version 1.22.1", 60);
  CAPTURE(m.r.err);
  MESSAGE("glob: " << m.seconds << " s, " << m.max_rss_kb << " KB");
  CHECK(m.r.exit_code == 2);
  CHECK(m.r.err.rfind("ngxtls: error: " + conf + ":1:1: include \"", 0) == 0);
  CHECK(contains(m.r.err,
                 "\" reads more than 1000000 directory entries looking for matches "
                 "(max_glob_entries)"));
  CHECK(m.seconds < 20);
  CHECK(m.max_rss_kb < 200 * 1024);
}

TEST_CASE("max_args_per_directive holds while the directive is read") {
  // 50 million arguments in one directive (100 MB): the error comes with the full count,
  // and the arguments past the limit are counted, not held (8 bytes each, 400 MB).
  test::temp_dir t;
  std::string text = "http {\n server {\n  server_name";
  text.reserve(text.size() + 100000000 + 16);
  for (int i = 0; i < 50000000; ++i) text += " a";
  text += ";\n }\n}\n";
  const auto conf = t.write("nginx.conf", text).string();
  text.clear();
  text.shrink_to_fit();
  const auto m = run_measured(
      quoted(test::ngxtls_binary()) + " lint " + quoted(conf) + " --nginx-version 1.22.1", 120);
  CAPTURE(m.r.err);
  MESSAGE("50,000,000 arguments: " << m.seconds << " s, " << m.max_rss_kb << " KB");
  CHECK(m.r.exit_code == 2);
  CHECK(m.r.err == "ngxtls: error: " + conf +
                       ":3:3: directive \"server_name\" has 50000000 arguments, more than the "
                       "limit of 100000 (max_args_per_directive)\n");
  CHECK(m.max_rss_kb < 250 * 1024);
}

TEST_CASE("an endless standard input stops at max_file_bytes, not at the end of memory") {
  for (const std::string command : {"lint", "parse"}) {
    CAPTURE(command);
    // The address space is capped so that the old whole-stream read fails within it.
    const auto m = run_measured("ulimit -v 6000000; exec " + quoted(test::ngxtls_binary()) + " " +
                                    command + " - < /dev/zero",
                                60);
    CAPTURE(m.r.err);
    MESSAGE(command << " < /dev/zero: " << m.seconds << " s, " << m.max_rss_kb << " KB");
    CHECK(m.r.exit_code == 2);
    CHECK(m.r.err ==
          "ngxtls: error: <stdin>: the input is larger than the limit of 268435456 "
          "bytes (max_file_bytes)\n");
    CHECK(m.max_rss_kb < 1024 * 1024);
  }
}

TEST_CASE("a config on standard input or as an nginx -T dump takes the memory of a file") {
  // A dump was copied into a map of strings and again into storage, and standard input read
  // into a growing string: `nginx -T | ngxtls lint -` on a 20 MB config peaked at 1.7 times
  // the memory of linting the file.
  test::temp_dir t;
  tls::pki_options po;
  po.dns_names = {"*.example.com", "example.com"};
  const auto pki = tls::make_pki((t.path() / "pki").string(), po);
  bench::gen_options o;
  o.target_bytes = std::size_t{12} << 20;
  o.certs = {{pki.chain, pki.leaf_key, "example.com"}};
  o.work_dir = t.path().string();
  const std::string text = bench::generate_config(o);
  const std::string conf = t.write("nginx.conf", text).string();
  // nginx -T prints each file after its marker line, followed by a line feed.
  const std::string dump =
      t.write("dump.txt", "# configuration file " + conf + ":\n" + text + "\n").string();
  const std::string lint = quoted(test::ngxtls_binary()) +
                           " lint --format json --nginx-version 1.22.1 -o " +
                           quoted(t.path().string()) + "/";
  const measured file = run_measured(lint + "file.json " + quoted(conf), 300);
  const measured piped = run_measured("cat " + quoted(dump) + " | " + lint + "piped.json -", 300);
  const measured redirected = run_measured(lint + "stdin.json - < " + quoted(conf), 300);
  MESSAGE("peak RSS: file " << file.max_rss_kb << " KB, dump on a pipe " << piped.max_rss_kb
                            << " KB, stdin " << redirected.max_rss_kb << " KB");
  REQUIRE(file.r.exit_code == 1);  // the generated config has findings
  CHECK(piped.r.exit_code == 1);
  CHECK(redirected.r.exit_code == 1);
  CHECK(piped.max_rss_kb < file.max_rss_kb * 5 / 4);
  CHECK(redirected.max_rss_kb < file.max_rss_kb * 5 / 4);
  // The same findings: the dump names the file's own path.
  const json from_file = json::parse(test::read_file(t.path() / "file.json"));
  const json from_dump = json::parse(test::read_file(t.path() / "piped.json"));
  REQUIRE(from_file["findings"].size() > 100);
  CHECK(from_dump["findings"] == from_file["findings"]);
}

TEST_CASE("findings are capped per rule, and every report says how many were dropped") {
  test::temp_dir t;
  std::string conf_text = "events {}\nhttp {\n";
  for (int i = 0; i < 200000; ++i) conf_text += "unknown_" + std::to_string(i) + " on;\n";
  conf_text += "}\n";
  const auto conf = t.write("nginx.conf", conf_text).string();
  const std::string bin = test::ngxtls_binary();
  auto j = test::run({bin, "lint", conf, "--format", "json", "--nginx-version", "1.22.1",
                      "--fail-on", "never", "--select", "unknown-directive"},
                     "", 120);
  REQUIRE_MESSAGE(j.exit_code == 0, j.err);
  const json doc = json::parse(j.out);
  CHECK(doc["findings"].size() == 10000);
  REQUIRE(doc.contains("findings_dropped"));
  CHECK(doc["findings_dropped"]["total"] == 190000);
  CHECK(doc["findings_dropped"]["per_rule"]["unknown-directive"] == 190000);
  auto s = test::run({bin, "lint", conf, "--format", "sarif", "--nginx-version", "1.22.1",
                      "--fail-on", "never", "--select", "unknown-directive"},
                     "", 120);
  REQUIRE(s.exit_code == 0);
  const json sarif = json::parse(s.out);
  CHECK(sarif["runs"][0]["results"].size() == 10000);
  REQUIRE(sarif["runs"][0]["properties"].contains("findings_dropped"));
  CHECK(sarif["runs"][0]["properties"]["findings_dropped"]["total"] == 190000);
  auto text = test::run({bin, "lint", conf, "--nginx-version", "1.22.1", "--fail-on", "never",
                         "--select", "unknown-directive"},
                        "", 120);
  REQUIRE(text.exit_code == 0);
  CHECK(contains(text.out,
                 "\n190000 more findings dropped, not shown (at most 10000 per rule "
                 "and 100000 in all are kept): unknown-directive 190000\n"));
}

TEST_CASE("a real nginx -T dump gives the findings of the files, marker-shaped comments too") {
  test::temp_dir t;
  test::make_fixture_material(t.path());
  const std::string dir = t.path().string();
  auto marker = [&](const std::string& path) {
    return "# configuration file " + dir + "/" + path + ":\n";
  };
  const std::string server_a =
      "server {\n    listen 127.0.0.1:1443 ssl;\n    server_name a.test;\n"
      "    ssl_session_tickets off;\n}\n";
  const std::string server_a2 =
      "server {\n    listen 127.0.0.1:1444 ssl;\n    server_name a2.test;\n"
      "    ssl_protocols TLSv1 TLSv1.2;\n}\n";
  // sites/a.conf with comments shaped like dump markers, one kind per variant.
  const std::vector<std::pair<std::string, std::string>> variants = {
      // naming the next site, from inside a server block
      {"inside a block", "server {\n    listen 127.0.0.1:1443 ssl;\n    server_name a.test;\n" +
                             marker("sites/b.conf") + "    ssl_session_tickets off;\n}\n" +
                             server_a2},
      // naming a file that a later glob would match, between two servers
      {"a later glob's file", server_a + marker("more/x.conf") + server_a2},
      // naming a file of the same glob that does not exist, and the main file
      {"a missing file",
       server_a + marker("sites/zz-gone.conf") + marker("nginx.conf") + server_a2},
  };
  t.write("nginx.conf",
          "events {}\nhttp {\n    ssl_certificate pki/noocsp/chain.pem;\n"
          "    ssl_certificate_key pki/noocsp/leaf.key;\n"
          "    include sites/*.conf;\n    include more/*.conf;\n}\n");
  t.write("sites/b.conf",
          "server {\n    listen 127.0.0.1:1445 ssl;\n    server_name b.test;\n"
          "    ssl_session_cache shared:b:1m;\n}\n");
  t.write("more/y.conf",
          "server {\n    listen 127.0.0.1:1446 ssl;\n    server_name y.test;\n"
          "    ssl_prefer_server_ciphers on;\n}\n");
  const auto conf = (t.path() / "nginx.conf").string();
  auto lint = [&](const std::string& path, const std::string& input) {
    auto r = test::run({test::ngxtls_binary(), "lint", path, "--format", "json", "--nginx-version",
                        "1.22.1", "--fail-on", "never"},
                       input);
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    return r.exit_code == 0 ? json::parse(r.out)["findings"] : json();
  };
  for (const auto& [name, a_conf] : variants) {
    // CAPTURE's lambda cannot capture a structured binding under clang 14: a named reference.
    const auto& name_shown = name;
    CAPTURE(name_shown);
    t.write("sites/a.conf", a_conf);
    auto dump = test::run_nginx({"nginx", "-T", "-p", dir + "/", "-c", conf, "-g",
                                 "pid " + dir + "/nginx.pid; error_log " + dir + "/error.log;"});
    REQUIRE_MESSAGE(dump.exit_code == 0, dump.err);
    const json files = lint(conf, "");
    const json from_dump = lint("-", dump.out);
    CHECK(files.size() >= 5);
    CHECK(from_dump == files);
  }
}
