// The lint command line: exit codes, --fail-on, selection, suppression, .ngxtls.toml,
// fleets and bad input.

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "support/fixture_env.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using json = nlohmann::json;

namespace {

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

test::command_result run_ngxtls(std::vector<std::string> args, const std::string& input = "") {
  args.insert(args.begin(), test::ngxtls_binary());
  return test::run(args, input, 60);
}

}  // namespace

TEST_CASE("exit codes follow --fail-on: 1 at or above the threshold, else 0") {
  test::temp_dir tmp;
  auto conf = tmp.write("nginx.conf", tickets_off).string();
  CHECK(run_ngxtls({"lint", conf, "--nginx-version", "1.22.1"}).exit_code == 1);
  CHECK(run_ngxtls({"lint", conf, "--nginx-version", "1.22.1", "--fail-on", "error"}).exit_code ==
        1);
  CHECK(run_ngxtls({"lint", conf, "--nginx-version", "1.22.1", "--fail-on", "never"}).exit_code ==
        0);
  // Only the ticket-key note is left once the error's rule is ignored.
  CHECK(run_ngxtls(
            {"lint", conf, "--nginx-version", "1.22.1", "--ignore", "tls13-resumption-disabled"})
            .exit_code == 0);
  CHECK(run_ngxtls({"lint", conf, "--nginx-version", "1.22.1", "--select", "ocsp-stapling-dead"})
            .exit_code == 0);
  auto bad = run_ngxtls({"lint", conf, "--select", "no-such-rule"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("unknown rule \"no-such-rule\"") != std::string::npos);
  CHECK(run_ngxtls({"lint", conf, "--format", "yaml"}).exit_code == 2);
}

TEST_CASE("text output names file:line:col, the rule and the assumed versions") {
  test::temp_dir tmp;
  auto conf = tmp.write("nginx.conf", tickets_off).string();
  auto r = run_ngxtls({"lint", conf, "--nginx-version", "1.22.1", "--openssl-version", "3.0.19"});
  CHECK(r.out.find(conf + ":6:9: error [tls13-resumption-disabled]") != std::string::npos);
  CHECK(r.out.find("assumed nginx 1.22.1 (--nginx-version), OpenSSL 3.0.19 (--openssl-version)") !=
        std::string::npos);
  CHECK(r.out.find("\x1b[") == std::string::npos);  // no color when not a TTY
}

TEST_CASE("inline suppression on the line or the line above silences only the named rule") {
  test::temp_dir tmp;
  std::string text = tickets_off;
  auto same_line = text;
  same_line.replace(
      same_line.find("ssl_session_tickets off;"), 24,
      "ssl_session_tickets off;  # ngxtls: ignore tls13-resumption-disabled -- load tests only");
  auto r1 = run_ngxtls({"lint", tmp.write("a.conf", same_line).string(), "--nginx-version",
                        "1.22.1", "--format", "json"});
  CHECK(json::parse(r1.out)["summary"]["error"] == 0);
  auto above = text;
  above.replace(above.find("        ssl_session_tickets off;"), 0,
                "        # ngxtls: ignore ticket-keys-not-shared, tls13-resumption-disabled\n");
  auto r2 = run_ngxtls({"lint", tmp.write("b.conf", above).string(), "--nginx-version", "1.22.1",
                        "--format", "json"});
  CHECK(json::parse(r2.out)["summary"]["error"] == 0);
  auto other = text;
  other.replace(other.find("ssl_session_tickets off;"), 24,
                "ssl_session_tickets off;  # ngxtls: ignore ocsp-stapling-dead");
  auto r3 = run_ngxtls({"lint", tmp.write("c.conf", other).string(), "--nginx-version", "1.22.1",
                        "--format", "json"});
  CHECK(json::parse(r3.out)["summary"]["error"] == 1);
}

TEST_CASE(
    ".ngxtls.toml sets versions, selection and severities, unknown keys are errors with their "
    "line") {
  test::temp_dir tmp;
  auto conf = tmp.write("nginx.conf", tickets_off).string();
  tmp.write(".ngxtls.toml",
            "nginx_version = \"1.24.0\"\n[severity]\ntls13-resumption-disabled = \"note\"\n");
  auto r = test::run({"sh", "-c",
                      "cd " + tmp.path().string() + " && " + test::ngxtls_binary() +
                          " lint nginx.conf --format json"});
  auto doc = json::parse(r.out);
  CHECK(r.exit_code == 0);
  CHECK(doc["assumed"]["nginx"] == "1.24.0");
  CHECK(doc["assumed"]["nginx_source"].get<std::string>().find(".ngxtls.toml") !=
        std::string::npos);
  CHECK(doc["summary"]["error"] == 0);
  tmp.write("bad.toml", "nginx_version = \"1.24.0\"\n\nfail_fast = true\n");
  auto bad = run_ngxtls({"lint", conf, "--config", (tmp.path() / "bad.toml").string()});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("bad.toml:3") != std::string::npos);
  CHECK(bad.err.find("unknown key \"fail_fast\"") != std::string::npos);
}

TEST_CASE("--fleet: two hosts serving one name with different keys expect about 1/2 resumption") {
  test::temp_dir tmp;
  test::make_fixture_material(tmp.path());
  auto host = [&](const char* name, const char* key) {
    return tmp
        .write(name, std::string("events {}\nhttp {\n    server {\n        listen 443 ssl;\n"
                                 "        server_name shop.example.com;\n"
                                 "        ssl_session_ticket_key ") +
                         key + ";\n    }\n}\n")
        .string();
  };
  auto a = host("a.conf", "keys/k1.key");
  auto b = host("b.conf", "keys/k2.key");
  auto c = host("c.conf", "keys/k1-copy.key");
  auto r = run_ngxtls({"lint", "--fleet", a, b, "--nginx-version", "1.22.1", "--format", "json",
                       "--select", "ticket-keys-not-shared"});
  auto doc = json::parse(r.out);
  REQUIRE(doc["findings"].size() == 2);
  CHECK(doc["findings"][0]["severity"] == "error");
  CHECK(doc["findings"][0]["message"].get<std::string>().find("expect about 1/2") !=
        std::string::npos);
  CHECK(doc["findings"][0]["location"]["line"] == 6);
  // The key files' fingerprint is compared, never printed (the report's `fingerprints` are
  // the places' code-scanning fingerprints, a hash of rule, file and directive).
  CHECK(r.out.find("\"fingerprint\"") == std::string::npos);
  CHECK(r.out.find("key_fingerprint") == std::string::npos);
  auto same = run_ngxtls({"lint", "--fleet", a, c, "--nginx-version", "1.22.1", "--format", "json",
                          "--select", "ticket-keys-not-shared"});
  CHECK(json::parse(same.out)["findings"].empty());
  // Without --fleet the same two files are independent configs.
  auto apart = run_ngxtls({"lint", a, b, "--nginx-version", "1.22.1", "--format", "json",
                           "--select", "ticket-keys-not-shared"});
  CHECK(json::parse(apart.out)["findings"].empty());
}

TEST_CASE("bad input gives exit 2 with a clear message, never a crash or a hang") {
  test::temp_dir tmp;
  auto check_input_error = [&](const std::string& path, const std::string& needle) {
    auto r = run_ngxtls({"lint", path, "--nginx-version", "1.22.1"});
    INFO(path << " -> " << r.exit_code << " " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(needle) != std::string::npos);
    CHECK(r.err.find("internal error") == std::string::npos);
  };
  check_input_error(tmp.path().string(), "");                                // a directory
  check_input_error((tmp.path() / "absent.conf").string(), "No such file");  // missing
  check_input_error(tmp.write("unbalanced.conf", "http {\n").string(), "unexpected end of file");
  check_input_error(tmp.write("self.conf", "include self.conf;\n").string(), "include");
  std::string binary(4096, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>((i * 7919) & 0xff);
  auto bin =
      run_ngxtls({"lint", tmp.write("binary.conf", binary).string(), "--nginx-version", "1.22.1"});
  CHECK((bin.exit_code == 2 || bin.exit_code == 0));
  CHECK(bin.err.find("internal error") == std::string::npos);
  // An empty file and /dev/null parse, but are no configuration nginx runs (nginx -t: no
  // "events" section): an empty-config error, not a clean pass.
  for (const std::string& path : {tmp.write("empty.conf", "").string(), std::string("/dev/null")}) {
    auto r = run_ngxtls({"lint", path, "--nginx-version", "1.22.1"});
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("error [empty-config]") != std::string::npos);
  }
  // Usage errors: no input at all.
  CHECK(run_ngxtls({"lint"}).exit_code == 2);
}

TEST_CASE("a 100 MB config is read and linted, not rejected or hung") {
  test::temp_dir tmp;
  std::string block =
      "    # filler comment line to make the file large ......................................\n";
  std::string text = "events {}\nhttp {\n";
  while (text.size() < 100u * 1024 * 1024) text += block;
  text +=
      "    server { listen 443 ssl; ssl_protocols TLSv1.3; ssl_session_tickets off; "
      "ssl_certificate c.pem; ssl_certificate_key k.pem; }\n}\n";
  auto conf = tmp.write("big.conf", text).string();
  auto r = run_ngxtls({"lint", conf, "--nginx-version", "1.22.1", "--format", "json"});
  CHECK(r.exit_code == 1);
  CHECK(json::parse(r.out)["summary"]["error"] == 1);
}

TEST_CASE("rules lists the catalog and prints each rule's doc") {
  auto list = run_ngxtls({"rules"});
  CHECK(list.exit_code == 0);
  for (const char* id : {"tls13-resumption-disabled", "ticket-keys-not-shared",
                         "ticket-key-rotation", "ocsp-stapling-dead", "utf8-bom"})
    CHECK(list.out.find(id) != std::string::npos);
  auto one = run_ngxtls({"rules", "ticket-key-rotation"});
  CHECK(one.out.find("## Why it matters") != std::string::npos);
  CHECK(run_ngxtls({"rules", "nope"}).exit_code == 2);
}

TEST_CASE("cross-server-resumption reads the Debian package version of the nginx on PATH") {
  // Debian 12 backported the CVE-2025-23419 fix into 1.22.1-9+deb12u1: a detected 1.22.1 from
  // such a package is judged as fixed (failed handshakes), not as the bypass.
  auto owner = test::run({"dpkg-query", "-S", "/usr/sbin/nginx"}, "", 20);
  if (owner.exit_code != 0) {
    std::cout << "NGXTLS_SKIP: /usr/sbin/nginx does not come from a Debian package here"
              << std::endl;
    return;
  }
  const std::string pkg = owner.out.substr(0, owner.out.find_first_of(":,"));
  const std::string version = test::run({"dpkg-query", "-W", "-f=${Version}", pkg}, "", 20).out;
  REQUIRE(version.rfind("1.22.1-9+deb12u", 0) == 0);
  const std::string conf =
      (test::source_dir() / "fixtures/rules/cross-server-resumption/verify-in-sni.conf").string();
  auto r = test::run({"env", "PATH=/usr/sbin:/usr/bin:/bin", test::ngxtls_binary(), "lint", conf,
                      "--select", "cross-server-resumption", "--format", "json"},
                     "", 60);
  INFO(r.out, r.err);
  auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["assumed"]["nginx"] == "1.22.1");
  CHECK(doc["assumed"]["nginx_source"] == "nginx -V");
  REQUIRE(doc["findings"].size() == 1);
  const auto& f = doc["findings"][0];
  CHECK(f["severity"] == "warning");
  CHECK(f["message"].get<std::string>().find("fail the handshake (alert access denied)") !=
        std::string::npos);
  bool package_fact = false;
  for (const auto& e : f["evidence"])
    if (e["name"] == "nginx package")
      package_fact = e["value"] == version && e["origin"] == "dpkg-query";
  CHECK(package_fact);
  // Pinned by hand, the version says nothing about a backport: the bypass holds unless the
  // distribution backported the fix.
  auto pinned =
      test::run({test::ngxtls_binary(), "lint", conf, "--select", "cross-server-resumption",
                 "--nginx-version", "1.22.1", "--format", "json"},
                "", 60);
  auto pdoc = nlohmann::json::parse(pinned.out);
  REQUIRE(pdoc["findings"].size() == 1);
  CHECK(pdoc["findings"][0]["severity"] == "error");
  CHECK(pdoc["findings"][0]["message"].get<std::string>().find(
            "unless your distribution backported the fix") != std::string::npos);
}

TEST_CASE(
    "with the nginx version neither given nor detected the first line says so and names what "
    "differs on 1.22.1") {
  test::temp_dir tmp;
  // Default server tickets off, b on, no cache: measured 0/20 at SNI b on 1.22.1 and 1.26.3
  // (an error there), 20/20 on 1.30.6 (no finding).
  const auto conf = tmp.write("nginx.conf", R"(events {}
http {
    ssl_protocols TLSv1.2 TLSv1.3;
    server { listen 443 ssl; server_name a.test; ssl_session_tickets off; }
    server { listen 443 ssl; server_name b.test; ssl_session_tickets on; }
}
)");
  auto lint = [&](const std::string& extra) {
    // No nginx on PATH (Debian's is in /usr/sbin), no .ngxtls.toml above the temp dir.
    return test::run(
        {"sh", "-c",
         "cd " + tmp.path().string() + " && PATH=/usr/bin:/bin " + test::ngxtls_binary() +
             " lint nginx.conf --select tls13-resumption-disabled --fail-on never " + extra},
        "", 60);
  };
  auto r = lint("");
  INFO(r.out, r.err);
  const std::string first = r.out.substr(0, r.out.find('\n'));
  CHECK(first.rfind("nginx version neither given nor detected: assumed 1.30.6 (the newest known)",
                    0) == 0);
  CHECK(
      first.find(
          "on nginx 1.22.1, 1 finding differs: tls13-resumption-disabled at nginx.conf:5:50 (error "
          "instead of none)") != std::string::npos);
  CHECK(first.find("--nginx-version 1.22.1") != std::string::npos);
  CHECK(first.find(".ngxtls.toml") != std::string::npos);
  auto j = lint("--format json");
  auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["assumed"]["notice"].get<std::string>() == first);
  // A pinned version: no notice.
  auto pinned = lint("--nginx-version 1.30.6");
  CHECK(pinned.out.rfind("nginx version neither", 0) == std::string::npos);
  CHECK(pinned.out.find("neither given nor detected") == std::string::npos);
  CHECK_FALSE(
      nlohmann::json::parse(lint("--nginx-version 1.30.6 --format json").out)["assumed"].contains(
          "notice"));
}

TEST_CASE("the assumed-version notice is in SARIF, GitHub output and check's reports too") {
  test::temp_dir tmp;
  // As above: tickets off in a, on in b, no cache; a finding at b on 1.22.1 only.
  const auto conf = tmp.write("nginx.conf", R"(events {}
http {
    ssl_protocols TLSv1.2 TLSv1.3;
    server { listen 443 ssl; server_name a.test; ssl_session_tickets off; }
    server { listen 443 ssl; server_name b.test; ssl_session_tickets on; }
}
)");
  auto ngxtls = [&](const std::string& args) {
    // No nginx on PATH (Debian's is in /usr/sbin), no .ngxtls.toml above the temp dir.
    return test::run({"sh", "-c",
                      "cd " + tmp.path().string() + " && PATH=/usr/bin:/bin " +
                          test::ngxtls_binary() + " " + args},
                     "", 60);
  };
  const std::string sel = " --select tls13-resumption-disabled --fail-on never";
  const std::string plain = ngxtls("lint nginx.conf" + sel).out;
  const std::string first = plain.substr(0, plain.find('\n'));
  REQUIRE(first.rfind("nginx version neither given nor detected", 0) == 0);

  auto sarif = nlohmann::json::parse(ngxtls("lint nginx.conf --format sarif" + sel).out);
  CHECK(sarif["runs"][0]["properties"]["assumed"]["notice"].get<std::string>() == first);
  auto gh = ngxtls("lint nginx.conf --format github" + sel).out;
  INFO(gh);
  const std::string gh_first = gh.substr(0, gh.find('\n'));
  CHECK(gh_first.rfind(
            "::notice title=ngxtls nginx version::nginx version neither given nor detected", 0) ==
        0);
  CHECK(gh_first.find("tls13-resumption-disabled at nginx.conf%3A5%3A50") ==
        std::string::npos);  // data, not a property
  CHECK(gh_first.find("tls13-resumption-disabled at nginx.conf:5:50") != std::string::npos);

  // check against a closed port: the report still stands, with the notice first.
  const std::string chk = "check nginx.conf --endpoint 127.0.0.1:1 --timeout 500" + sel;
  auto text = ngxtls(chk).out;
  CHECK(text.substr(0, text.find('\n')) == first);
  auto cj = nlohmann::json::parse(ngxtls(chk + " --format json").out);
  CHECK(cj["assumed"]["notice"].get<std::string>() == first);
  auto cs = nlohmann::json::parse(ngxtls(chk + " --format sarif").out);
  CHECK(cs["runs"][0]["properties"]["assumed"]["notice"].get<std::string>() == first);
  // Pinned: none.
  auto pinned = nlohmann::json::parse(ngxtls(chk + " --nginx-version 1.30.6 --format json").out);
  CHECK_FALSE(pinned["assumed"].contains("notice"));
  CHECK(ngxtls("lint nginx.conf --format github --nginx-version 1.30.6" + sel)
            .out.find("::notice title=ngxtls nginx version") == std::string::npos);
}

// A baseline that holds no TLS server compares nothing: a rotation gate pointed at the wrong
// file must not pass as if no baseline were given.
TEST_CASE("lint --baseline with no TLS server in it is an error that says why") {
  test::temp_dir dir;
  const auto conf = dir.write("nginx.conf", tickets_off).string();
  auto plain = run_ngxtls({"lint", conf, "--nginx-version", "1.22.1"});
  REQUIRE(plain.exit_code == 1);  // tickets off without a cache: findings

  struct bad_baseline {
    std::string path, reason;
  };
  const std::vector<bad_baseline> cases = {
      {dir.write("empty.conf", "").string(), "no server block in it"},
      {"/dev/null", "no server block in it"},
      // A file nginx reads that is no server config.
      {dir.write("mime.types", "types {\n    text/html html htm;\n    image/png png;\n}\n")
           .string(),
       "no server block in it"},
      {dir.write("plain-http.conf",
                 "events {}\nhttp {\n    server {\n        listen 80;\n        server_name a;\n"
                 "    }\n}\n")
           .string(),
       "no TLS server in it"}};
  for (const auto& c : cases) {
    CAPTURE(c.path);
    auto r = run_ngxtls({"lint", conf, "--nginx-version", "1.22.1", "--baseline", c.path});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("ngxtls: error: " + c.path + ": --baseline: " + c.reason) !=
          std::string::npos);
    // check reads its baseline through the same pipeline, before it probes anything.
    auto chk = run_ngxtls({"check", conf, "--nginx-version", "1.22.1", "--endpoint", "127.0.0.1:9",
                           "--baseline", c.path});
    CHECK(chk.exit_code == 2);
    CHECK(chk.err.find("--baseline: " + c.reason) != std::string::npos);
  }

  // A baseline with a TLS server is compared: the same findings as without one here.
  const auto old = dir.write("old.conf", tickets_off).string();
  auto with = run_ngxtls({"lint", conf, "--nginx-version", "1.22.1", "--baseline", old});
  CHECK(with.exit_code == 1);
  CHECK(with.out == plain.out);
}
