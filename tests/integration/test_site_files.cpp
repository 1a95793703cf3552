// Inputs as operators review them (site files, snippets, directories) and the errors that stop
// nginx before deploy, each compared with what real nginx does with the same files: the file
// included where Debian's nginx.conf includes it, run through `nginx -t` on every nginx of the
// version matrix installed here (tests/support/nginx_versions.hpp).
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "support/nginx_instance.hpp"
#include "support/nginx_run.hpp"
#include "support/nginx_versions.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using namespace ngxtls::test;
using json = nlohmann::json;

namespace {

command_result ngxtls_run(std::vector<std::string> args, const std::string& cwd = "") {
  args.insert(args.begin(), ngxtls_binary());
  args.insert(args.end(), {"--nginx-version", "1.22.1", "--openssl-version", "3.0.19"});
  if (cwd.empty()) return run(args, "", 60);
  std::string cmd = "cd '" + cwd + "' &&";
  for (const auto& a : args) cmd += " '" + a + "'";
  return run({"sh", "-c", cmd}, "", 60);
}

/// The installed nginx binaries of the matrix (at least Debian's 1.22.1 when installed).
std::vector<nginx_version_entry> installed_nginx() {
  std::vector<nginx_version_entry> out;
  for (const char* slot : {"1.22", "1.26", "1.30"}) {
    auto v = nginx_version_for(slot);
    if (v.status == "ok")
      out.push_back(v);
    else
      std::cout << "NGXTLS_SKIP: nginx " << v.version << ": " << v.note << std::endl;
  }
  return out;
}

/// `nginx -t` of `main` (prefix `dir`): stderr, with the syntax-ok lines.
std::string nginx_t(const nginx_version_entry& v, const std::filesystem::path& dir,
                    const std::filesystem::path& main) {
  auto r =
      run_nginx({v.binary, "-t", "-p", dir.string(), "-c", main.string(), "-e",
                 (dir / "error.log").string(), "-g", "pid " + (dir / "nginx.pid").string() + ";"});
  return r.err + r.out;
}

/// The http{} lines every test nginx.conf needs to keep nginx's writes in `dir`.
std::string quiet_http(const std::filesystem::path& dir) {
  std::string t = dir.string();
  return "    access_log off;\n    client_body_temp_path " + t + "/b;\n    proxy_temp_path " + t +
         "/p;\n    fastcgi_temp_path " + t + "/f;\n    uwsgi_temp_path " + t +
         "/u;\n    scgi_temp_path " + t + "/s;\n";
}

const std::string debian_stream_module = "/usr/lib/nginx/modules/ngx_stream_module.so";

/// The first lines of a test nginx.conf with a stream block for nginx `v`: "events {}", after
/// a load_module of Debian's stream module where `v` builds it as a dynamic module; nullopt
/// when `v` has no stream module here (only Debian's 1.22.1 module is installed).
std::optional<std::string> stream_head(const nginx_version_entry& v) {
  if (run({v.binary, "-V"}).err.find("--with-stream=dynamic") == std::string::npos)
    return "events {}\n";
  if (v.slot != "1.22" || !std::filesystem::exists(debian_stream_module)) return std::nullopt;
  return "load_module " + debian_stream_module + ";\nevents {}\n";
}

/// Debian's ngx_mail_module.so for nginx 1.22.1, or nullopt (the test is skipped, saying why).
/// Debian ships it in libnginx-mod-mail (scripts/install-deps.sh installs it);
/// NGXTLS_MAIL_MODULE names another file.
std::optional<std::string> debian_mail_module() {
  const char* given = std::getenv("NGXTLS_MAIL_MODULE");
  const std::string module = given != nullptr ? given : "/usr/lib/nginx/modules/ngx_mail_module.so";
  if (!std::filesystem::exists(module) || nginx_version_for("1.22").status != "ok") {
    std::cout << "NGXTLS_SKIP: set NGXTLS_MAIL_MODULE to Debian's ngx_mail_module.so (package "
                 "libnginx-mod-mail) to measure mail on nginx 1.22.1"
              << std::endl;
    return std::nullopt;
  }
  return module;
}

}  // namespace

TEST_CASE("a site file is read inside http as nginx reads conf.d/, and says so in every format") {
  temp_dir tmp;
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  const std::string site =
      "server {\n    listen 127.0.0.1:18443 ssl;\n    server_name app.test;\n"
      "    ssl_certificate " +
      pki.chain + ";\n    ssl_certificate_key " + pki.leaf_key +
      ";\n    ssl_protocols TLSv1.2;\n}\n";
  const auto file = tmp.write("conf.d/app.conf", site);
  auto r = ngxtls_run({"lint", file.string(), "--format", "json"});
  INFO(r.err);
  REQUIRE((r.exit_code == 0 || r.exit_code == 1));
  const json doc = json::parse(r.out);
  REQUIRE(doc["input_contexts"].size() == 1);
  CHECK(doc["input_contexts"][0]["context"] == "http");
  CHECK(doc["input_contexts"][0]["how"].get<std::string>().find("inside http { }") !=
        std::string::npos);
  CHECK(doc["summary"]["tls_servers"] == 1);
  // The TLS rules ran on the server, and point into the operator's file.
  bool tls13 = false;
  for (const auto& f : doc["findings"]) {
    CHECK(f["location"]["file"] == file.string());
    if (f["rule"] == "tls13-missing") {
      tls13 = true;
      CHECK(f["location"]["line"] == 6);
    }
  }
  CHECK(tls13);
  auto text = ngxtls_run({"lint", file.string()});
  CHECK(text.out.find(file.string() + ": read inside http { }") != std::string::npos);
  auto sarif = json::parse(ngxtls_run({"lint", file.string(), "--format", "sarif"}).out);
  CHECK(sarif["runs"][0]["properties"]["input_contexts"][0]["context"] == "http");
  auto gh = ngxtls_run({"lint", file.string(), "--format", "github"});
  CHECK(gh.out.find("::notice title=ngxtls input::") != std::string::npos);

  // nginx reads the same file without complaint where Debian's nginx.conf includes conf.d/.
  const auto main = tmp.write("nginx.conf", "events {}\nhttp {\n" + quiet_http(tmp.path()) +
                                                "    include conf.d/*.conf;\n}\n");
  for (const auto& v : installed_nginx()) {
    INFO("nginx " << v.version);
    CHECK(nginx_t(v, tmp.path(), main).find("test is successful") != std::string::npos);
  }
}

TEST_CASE(
    "a server that proxies to HOST:PORT from the server block is read as stream, as nginx "
    "accepts it only there") {
  temp_dir tmp;
  const auto file = tmp.write("conf.d/db.conf",
                              "upstream pg { server 127.0.0.1:5432; }\nserver {\n    listen "
                              "127.0.0.1:15432;\n    proxy_pass pg;\n}\n");
  auto r = ngxtls_run({"lint", file.string(), "--format", "json"});
  const json doc = json::parse(r.out);
  REQUIRE(doc["input_contexts"].size() == 1);
  CHECK(doc["input_contexts"][0]["context"] == "stream");
  CHECK(doc["input_contexts"][0]["why"].get<std::string>().find("proxy_pass pg") !=
        std::string::npos);
  // Real nginx: inside http, `"proxy_pass" directive is not allowed here`; inside stream, fine.
  const auto in_http = tmp.write("http.conf", "events {}\nhttp {\n" + quiet_http(tmp.path()) +
                                                  "    include conf.d/db.conf;\n}\n");
  const auto in_stream =
      tmp.write("stream.conf", "load_module " + debian_stream_module +
                                   ";\nevents {}\nstream {\n    include conf.d/db.conf;\n}\n");
  auto v = nginx_version_for("1.22");
  if (v.status != "ok" || !std::filesystem::exists(debian_stream_module)) {
    std::cout << "NGXTLS_SKIP: Debian's nginx 1.22.1 with its stream module is not installed"
              << std::endl;
    return;
  }
  CHECK(nginx_t(v, tmp.path(), in_http).find("\"proxy_pass\" directive is not allowed here") !=
        std::string::npos);
  CHECK(nginx_t(v, tmp.path(), in_stream).find("test is successful") != std::string::npos);
}

TEST_CASE(
    "a snippet of location blocks is read inside a server, and one of proxy lines inside "
    "a location") {
  temp_dir tmp;
  const auto loc =
      tmp.write("snippets/loc.conf", "location /health {\n    return 204;\n}\nlisten 8080;\n");
  auto doc = json::parse(ngxtls_run({"lint", loc.string(), "--format", "json"}).out);
  CHECK(doc["input_contexts"][0]["context"] == "server");
  const auto proxy = tmp.write("snippets/proxy.conf",
                               "proxy_pass http://127.0.0.1:8080;\nproxy_set_header Host $host;\n");
  doc = json::parse(ngxtls_run({"lint", proxy.string(), "--format", "json"}).out);
  CHECK(doc["input_contexts"][0]["context"] == "location");
  // Neither is "not allowed here" any more: each is read where it belongs.
  for (const auto& f : doc["findings"]) CHECK(f["rule"] != "directive-not-allowed-here");
  // A main nginx.conf is read as it is: no input_contexts entry.
  const auto main = tmp.write("nginx.conf", "events {}\nhttp {}\n");
  doc = json::parse(ngxtls_run({"lint", main.string(), "--format", "json"}).out);
  CHECK(doc["input_contexts"].empty());
}

TEST_CASE("a run with no TLS server says so in a note and on the summary line of every format") {
  temp_dir tmp;
  const auto file = tmp.write("sites-enabled/plain",
                              "server {\n    listen 80;\n    return 301 https://$host;\n}\n");
  auto text = ngxtls_run({"lint", file.string()});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("note [no-tls-server] no `listen ... ssl`, `quic` or `ssl_certificate` in 1 "
                      "file: nothing TLS was checked") != std::string::npos);
  CHECK(text.out.find("0 errors, 0 warnings, 1 note; no TLS server in 1 file: nothing TLS was "
                      "checked\n") != std::string::npos);
  auto doc = json::parse(ngxtls_run({"lint", file.string(), "--format", "json"}).out);
  CHECK(doc["summary"]["tls_servers"] == 0);
  CHECK(doc["summary"]["no_tls_server"] == "no TLS server in 1 file: nothing TLS was checked");
  auto sarif = json::parse(ngxtls_run({"lint", file.string(), "--format", "sarif"}).out);
  CHECK(sarif["runs"][0]["properties"]["summary"]["no_tls_server"] ==
        "no TLS server in 1 file: nothing TLS was checked");
  auto gh = ngxtls_run({"lint", file.string(), "--format", "github"});
  CHECK(gh.out.find("::notice title=ngxtls summary::no TLS server in 1 file") != std::string::npos);
  // A TLS server: no note, no summary text.
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  const auto tls_file = tmp.write(
      "sites-enabled/tls", "server {\n    listen 443 ssl;\n    ssl_certificate " + pki.chain +
                               ";\n    ssl_certificate_key " + pki.leaf_key + ";\n}\n");
  auto tls_text = ngxtls_run({"lint", tls_file.string()});
  CHECK(tls_text.out.find("no-tls-server") == std::string::npos);
  CHECK(tls_text.out.find("nothing TLS was checked") == std::string::npos);
}

TEST_CASE("a folder of site files is one http block: sorted, recursive, what it skipped listed") {
  temp_dir tmp;
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  // Two files share *:443; the default server (first in file order) has no certificate and
  // rejects no handshake: nginx refuses the whole set, which neither file shows on its own.
  tmp.write("sites/conf.d/0-empty.conf", "# nothing yet\n");  // first in order: no empty-config
  tmp.write("sites/conf.d/a.conf",
            "server {\n    listen 443 ssl;\n    server_name a.test;\n    include "
            "snippets/tls.conf;\n}\n");
  tmp.write("sites/conf.d/b.conf", "server {\n    listen 443 ssl;\n    server_name b.test;\n}\n");
  tmp.write("sites/snippets/tls.conf",
            "ssl_certificate " + pki.chain + ";\nssl_certificate_key " + pki.leaf_key + ";\n");
  tmp.write("sites/README.md", "not a config\n");
  tmp.write("sites/sites-enabled/c", "server {\n    listen 8080;\n}\n");
  tmp.write("sites/sites-available/c", "server {\n    listen 8080;\n}\n");
  tmp.write("sites/sites-available/d", "server {\n    listen 443 ssl;\n}\n");
  auto r = ngxtls_run({"lint", "sites", "--format", "json"}, tmp.path().string());
  INFO(r.out << r.err);
  const json doc = json::parse(r.out);
  REQUIRE(doc["input_contexts"].size() == 1);
  CHECK(doc["input_contexts"][0]["context"] == "directory");
  std::map<std::string, std::string> skipped;
  for (const auto& s : doc["input_contexts"][0]["skipped"])
    skipped[s["path"].get<std::string>()] = s["reason"].get<std::string>();
  CHECK(skipped.count("sites/README.md"));
  CHECK(skipped.count("sites/sites-available"));  // nginx reads sites-enabled
  CHECK(skipped["sites/snippets/tls.conf"].find("included by sites/conf.d/a.conf") !=
        std::string::npos);
  CHECK(doc["summary"]["files_read"] == 5);  // 0-empty.conf, a.conf, tls.conf (included), b.conf, c
  // b.conf's server shares a.conf's socket: the default (a) has a certificate, so nginx
  // accepts b without one; and b's server is on the same socket, as nginx groups them.
  for (const auto& f : doc["findings"]) {
    CHECK(f["rule"] != "ssl-certificate-missing");
    CHECK(f["rule"] != "empty-config");
  }
  // An empty folder is no configuration: exit 2, said so.
  std::filesystem::create_directories(tmp.path() / "empty");
  auto e = ngxtls_run({"lint", (tmp.path() / "empty").string()});
  CHECK(e.exit_code == 2);
  CHECK(e.err.find("no nginx configuration in this directory") != std::string::npos);
}

TEST_CASE(
    "an /etc/nginx style directory is read from its nginx.conf; files it does not "
    "include are listed as skipped") {
  temp_dir tmp;
  tmp.write("etc/nginx.conf", "events {}\nhttp {\n    include sites-enabled/*;\n}\n");
  tmp.write("etc/sites-enabled/app", "server {\n    listen 80;\n}\n");
  tmp.write("etc/sites-available/old", "server {\n    listen 443 ssl;\n}\n");
  auto doc =
      json::parse(ngxtls_run({"lint", (tmp.path() / "etc").string(), "--format", "json"}).out);
  REQUIRE(doc["input_contexts"].size() == 1);
  CHECK(doc["input_contexts"][0]["context"] == "main");
  CHECK(doc["input_contexts"][0]["how"] ==
        "from " + (tmp.path() / "etc/nginx.conf").string() + " and the files it includes");
  const auto& skipped = doc["input_contexts"][0]["skipped"];
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0]["path"] == (tmp.path() / "etc/sites-available/old").string());
  CHECK(skipped[0]["reason"] == "not included by nginx.conf");
  // sites-available/old's listen without a certificate is not what nginx runs: not reported.
  for (const auto& f : doc["findings"]) CHECK(f["rule"] != "ssl-certificate-missing");
}

TEST_CASE(
    "listen ssl without ssl_certificate, and a certificate without its key, are errors "
    "at the line nginx -t refuses") {
  temp_dir tmp;
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  struct scenario {
    const char* name;
    std::string servers;
    std::string nginx_says;  // regex on nginx -t's output
    std::string rule;        // ngxtls finding
    std::uint32_t line;      // of ngxtls's finding in conf.d/site.conf
  };
  const std::string cert = "    ssl_certificate " + pki.chain + ";\n";
  const std::string key = "    ssl_certificate_key " + pki.leaf_key + ";\n";
  const std::vector<scenario> cases = {
      {"listen ssl, no certificate",
       "server {\n    listen 127.0.0.1:18443 ssl;\n    server_name a.test;\n}\n",
       R"(no "ssl_certificate" is defined for the "listen \.\.\. ssl" directive in .*site\.conf:1)",
       "ssl-certificate-missing", 2},
      {"default rejects handshakes, name-based server without certificate",
       "server {\n    listen 127.0.0.1:18443 ssl default_server;\n    ssl_reject_handshake on;\n}\n"
       "server {\n    listen 127.0.0.1:18443 ssl;\n    server_name b.test;\n}\n",
       R"(no "ssl_certificate" is defined for the "listen \.\.\. ssl" directive in .*site\.conf:5)",
       "ssl-certificate-missing", 6},
      {"certificate without key", "server {\n    listen 127.0.0.1:18443 ssl;\n" + cert + "}\n",
       "no \"ssl_certificate_key\" is defined for certificate \"" + pki.chain + "\"",
       "ssl-certificate-key-missing", 3},
      {"name-based server without certificate behind a default with one (accepted)",
       "server {\n    listen 127.0.0.1:18443 ssl default_server;\n" + cert + key +
           "}\nserver {\n    listen 127.0.0.1:18443 ssl;\n    server_name b.test;\n}\n",
       "test is successful", "", 0},
  };
  const auto main = tmp.write("nginx.conf", "events {}\nhttp {\n" + quiet_http(tmp.path()) +
                                                "    include conf.d/*.conf;\n}\n");
  const auto nginx = installed_nginx();
  for (const auto& c : cases) {
    INFO(c.name);
    const auto site = tmp.write("conf.d/site.conf", c.servers);
    for (const auto& v : nginx) {
      INFO("nginx " << v.version);
      const std::string out = nginx_t(v, tmp.path(), main);
      CHECK_MESSAGE(std::regex_search(out, std::regex(c.nginx_says)), out);
    }
    auto doc = json::parse(ngxtls_run({"lint", site.string(), "--format", "json"}).out);
    std::vector<std::pair<std::string, std::uint32_t>> errors;
    for (const auto& f : doc["findings"])
      if (f["rule"] == "ssl-certificate-missing" || f["rule"] == "ssl-certificate-key-missing")
        errors.emplace_back(f["rule"], f["location"]["line"]);
    if (c.rule.empty()) {
      CHECK(errors.empty());
    } else {
      REQUIRE(errors.size() == 1);
      CHECK(errors[0].first == c.rule);
      CHECK(errors[0].second == c.line);
    }
  }
}

TEST_CASE(
    "stream {} without load_module where nginx -V shows --with-stream=dynamic is nginx's "
    "unknown directive \"stream\"") {
  auto v = nginx_version_for("1.22");
  if (v.status != "ok" ||
      run({v.binary, "-V"}).err.find("--with-stream=dynamic") == std::string::npos) {
    std::cout << "NGXTLS_SKIP: no nginx built with --with-stream=dynamic here" << std::endl;
    return;
  }
  temp_dir tmp;
  const std::string body =
      "events {}\nstream {\n    server {\n        listen 127.0.0.1:15433;\n        proxy_pass "
      "127.0.0.1:5432;\n    }\n}\n";
  const auto bare = tmp.write("bare.conf", body);
  const auto loaded =
      tmp.write("loaded.conf", "load_module " + debian_stream_module + ";\n" + body);
  CHECK(nginx_t(v, tmp.path(), bare)
            .find("unknown directive \"stream\" in " + bare.string() + ":2") != std::string::npos);
  CHECK(nginx_t(v, tmp.path(), loaded).find("test is successful") != std::string::npos);
  // ngxtls asks the same nginx (its directory first on PATH) for its build.
  const std::string dir = std::filesystem::path(v.binary).parent_path().string();
  auto lint = [&](const std::filesystem::path& conf) {
    return run({"env", "PATH=" + dir + ":/usr/bin:/bin", ngxtls_binary(), "lint", conf.string(),
                "--format", "json"},
               "", 60);
  };
  auto r = lint(bare);
  INFO(r.err);
  auto doc = json::parse(r.out);
  bool found = false;
  for (const auto& f : doc["findings"])
    if (f["rule"] == "unknown-directive" && f["location"]["line"] == 2 &&
        f["severity"] == "error" &&
        f["message"].get<std::string>().rfind("unknown directive \"stream\"", 0) == 0)
      found = true;
  CHECK(found);
  for (const auto& f : json::parse(lint(loaded).out)["findings"])
    CHECK(f["rule"] != "unknown-directive");
}

TEST_CASE(
    "a syntax error after a brace in an unquoted regex names first the line nginx -t stops "
    "at, and an unclosed block where it was opened") {
  temp_dir tmp;
  // `{4}` in the unquoted regex opens a block: nginx stops at line 5 (the rewrite), before the
  // `}` that then closes the server too early and the end of file that follows.
  const auto conf =
      tmp.write("nginx.conf", "events {}\nhttp {\n" + quiet_http(tmp.path()) +
                                  "    server {\n        listen 127.0.0.1:18080;\n"
                                  "        more_headers ^/(\\d{4})/$ /x;\n    }\n}\n");
  const int line = 11;  // events, http, 6 quiet_http lines, server, listen, then this one
  for (const auto& v : installed_nginx()) {
    INFO("nginx " << v.version);
    const std::string out = nginx_t(v, tmp.path(), conf);
    CHECK_MESSAGE(out.find("unknown directive \"more_headers\" in " + conf.string() + ":" +
                           std::to_string(line)) != std::string::npos,
                  out);
  }
  auto r = ngxtls_run({"lint", conf.string()});
  CHECK(r.exit_code == 2);
  INFO(r.err);
  const std::string first = "ngxtls: error: " + conf.string() + ":" + std::to_string(line) +
                            ":9: \"more_headers\" opens a block, which nginx stops at first";
  CHECK(r.err.rfind(first, 0) == 0);
  CHECK(r.err.find("unexpected end of file, expecting \"}\"") != std::string::npos);
  CHECK(r.err.find("note: " + conf.string() +
                   ":2:1: the \"http\" block opened here is not "
                   "closed") != std::string::npos);
}

TEST_CASE("a stream listen ssl without ssl_certificate is an error at the listen nginx -t names") {
  temp_dir tmp;
  const std::string body =
      "stream {\n    server {\n        listen 127.0.0.1:15433 ssl;\n"
      "        proxy_pass 127.0.0.1:5432;\n    }\n}\n";
  // The stream module: Debian's as a dynamic module on 1.22.1, built in on upstream 1.26.3.
  std::size_t measured = 0;
  for (const auto& v : installed_nginx()) {
    const auto head = stream_head(v);
    if (!head) continue;
    const bool dynamic = head->starts_with("load_module");
    const auto conf = tmp.write("stream-" + v.slot + ".conf", *head + body);
    const int listen_line = dynamic ? 5 : 4;
    // nginx 1.22.1 names the listen line, 1.26.3 and later the server line.
    const int nginx_line = v.slot == "1.22" ? listen_line : listen_line - 1;
    INFO("nginx " << v.version);
    const std::string out = nginx_t(v, tmp.path(), conf);
    CHECK_MESSAGE(out.find("no \"ssl_certificate\" is defined for the \"listen ... ssl\" "
                           "directive in " +
                           conf.string() + ":" + std::to_string(nginx_line)) != std::string::npos,
                  out);
    auto doc = json::parse(ngxtls_run({"lint", conf.string(), "--format", "json"}).out);
    bool found = false;
    for (const auto& f : doc["findings"])
      found =
          found || (f["rule"] == "ssl-certificate-missing" && f["location"]["line"] == listen_line);
    CHECK(found);
    ++measured;
  }
  if (measured == 0) std::cout << "NGXTLS_SKIP: no nginx with a stream module here" << std::endl;
}

TEST_CASE(
    "mail: a STARTTLS or listen ssl server without a certificate is the error nginx -t "
    "gives, and TLS 1.0 in mail is reported") {
  const auto module = debian_mail_module();
  if (!module) return;
  auto v = nginx_version_for("1.22");
  temp_dir tmp;
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  const std::string head =
      "load_module " + *module + ";\nevents {}\nmail {\n    auth_http 127.0.0.1:9/auth;\n";
  struct scenario {
    std::string server;
    std::string nginx_says;
    std::string rule;
    std::uint32_t line;
  };
  const std::vector<scenario> cases = {
      {"    server {\n        listen 127.0.0.1:18143;\n        protocol imap;\n        starttls "
       "on;\n    }\n",
       "no \"ssl_certificate\" is defined for the \"starttls\" directive",
       "ssl-certificate-missing", 8},
      {"    server {\n        listen 127.0.0.1:18993 ssl;\n        protocol imap;\n    }\n",
       "no \"ssl_certificate\" is defined for the \"listen ... ssl\" directive",
       "ssl-certificate-missing", 6},
      {"    server {\n        listen 127.0.0.1:18993 ssl;\n        protocol imap;\n"
       "        ssl_certificate " +
           pki.chain + ";\n    }\n",
       "no \"ssl_certificate_key\" is defined for the \"listen ... ssl\" directive",
       "ssl-certificate-key-missing", 8},
  };
  for (const auto& c : cases) {
    const auto conf = tmp.write("mail.conf", head + c.server + "}\n");
    const std::string out = nginx_t(v, tmp.path(), conf);
    CHECK_MESSAGE(out.find(c.nginx_says) != std::string::npos, out);
    auto doc = json::parse(ngxtls_run({"lint", conf.string(), "--format", "json"}).out);
    bool found = false;
    for (const auto& f : doc["findings"])
      found = found || (f["rule"] == c.rule && f["location"]["line"] == c.line);
    CHECK_MESSAGE(found, doc["findings"].dump());
  }
  // TLS 1.0/1.1 in a mail server: nginx takes it; lint reports it.
  const auto legacy =
      tmp.write("legacy.conf",
                head +
                    "    server {\n        listen 127.0.0.1:18993 ssl;\n        protocol "
                    "imap;\n        ssl_protocols TLSv1 TLSv1.1 TLSv1.2;\n        "
                    "ssl_certificate " +
                    pki.chain + ";\n        ssl_certificate_key " + pki.leaf_key + ";\n    }\n}\n");
  CHECK(nginx_t(v, tmp.path(), legacy).find("test is successful") != std::string::npos);
  bool legacy_found = false;
  const auto legacy_doc =
      json::parse(ngxtls_run({"lint", legacy.string(), "--format", "json"}).out);
  for (const auto& f : legacy_doc["findings"])
    legacy_found = legacy_found || (f["rule"] == "legacy-protocols" && f["location"]["line"] == 8);
  CHECK_MESSAGE(legacy_found, legacy_doc["findings"].dump());
}

namespace {

/// `lint --format json` of `conf` assuming nginx `v` (OpenSSL 3.0.19).
json lint_as(const nginx_version_entry& v, const std::filesystem::path& conf) {
  auto r = run({ngxtls_binary(), "lint", conf.string(), "--format", "json", "--nginx-version",
                v.version, "--openssl-version", "3.0.19"},
               "", 60);
  INFO(r.err);
  return json::parse(r.out);
}

/// The messages of `rule`'s findings at `line`.
std::vector<std::string> messages_at(const json& doc, const std::string& rule, int line) {
  std::vector<std::string> out;
  for (const auto& f : doc["findings"])
    if (f["rule"] == rule && f["location"]["line"] == line)
      out.push_back(f["message"].get<std::string>());
  return out;
}

/// The number of `rule`'s findings.
std::size_t count_rule(const json& doc, const std::string& rule) {
  std::size_t n = 0;
  for (const auto& f : doc["findings"]) n += f["rule"] == rule;
  return n;
}

}  // namespace

TEST_CASE(
    "a listen nginx refuses as a duplicate is an error at the listen nginx -t names and in its "
    "words") {
  temp_dir tmp;
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  const std::string certs =
      "    ssl_certificate " + pki.chain + ";\n    ssl_certificate_key " + pki.leaf_key + ";\n";
  std::size_t stream_measured = 0;
  for (const auto& v : installed_nginx()) {
    INFO("nginx " << v.version);
    // http: a second server on the address and port is name-based; the same one twice in one
    // server is refused on every version, with the wildcard printed as 0.0.0.0.
    const auto http = tmp.write(
        "http-" + v.slot + ".conf",
        "events {}\nhttp {\n" + quiet_http(tmp.path()) + certs +
            "    server {\n        listen 18443 ssl;\n        server_name a.test;\n    }\n"
            "    server {\n        listen 18443 ssl;\n        listen 0.0.0.0:18443;\n"
            "        server_name b.test;\n    }\n}\n");
    const int http_line = 17;
    CHECK_MESSAGE(nginx_t(v, tmp.path(), http)
                          .find("a duplicate listen 0.0.0.0:18443 in " + http.string() + ":" +
                                std::to_string(http_line)) != std::string::npos,
                  nginx_t(v, tmp.path(), http));
    const auto http_found = messages_at(lint_as(v, http), "duplicate-listen", http_line);
    REQUIRE(http_found.size() == 1);
    CHECK(http_found[0].rfind("a duplicate listen 0.0.0.0:18443: nginx refuses to start", 0) == 0);

    // stream: a second server on the address and port is refused before 1.25.5 and shares
    // the socket (chosen by server_name; 1.26.3 warns of the conflicting empty name) from then
    // on.
    const auto head = stream_head(v);
    if (!head) continue;
    const bool dynamic = head->starts_with("load_module");
    const auto stream = tmp.write("stream-" + v.slot + ".conf",
                                  *head + "stream {\n" + certs +
                                      "    server {\n        listen 127.0.0.1:15433 ssl;\n"
                                      "        proxy_pass 127.0.0.1:5432;\n    }\n"
                                      "    server {\n        listen 127.0.0.1:15433 ssl;\n"
                                      "        proxy_pass 127.0.0.1:5432;\n    }\n}\n");
    const int stream_line = dynamic ? 11 : 10;
    const std::string out = nginx_t(v, tmp.path(), stream);
    const auto doc = lint_as(v, stream);
    if (v.slot == "1.22") {
      CHECK_MESSAGE(
          out.find("duplicate \"127.0.0.1:15433\" address and port pair in " + stream.string() +
                   ":" + std::to_string(stream_line)) != std::string::npos,
          out);
      const auto found = messages_at(doc, "duplicate-listen", stream_line);
      REQUIRE(found.size() == 1);
      CHECK(found[0].rfind("duplicate \"127.0.0.1:15433\" address and port pair: nginx refuses",
                           0) == 0);
    } else {
      CHECK_MESSAGE(out.find("test is successful") != std::string::npos, out);
      CHECK(count_rule(doc, "duplicate-listen") == 0);
    }
    ++stream_measured;
  }
  if (stream_measured == 0)
    std::cout << "NGXTLS_SKIP: no nginx with a stream module here" << std::endl;

  // mail: servers are not told apart by name, on any version; the refused listen joins no
  // socket, so no session crosses between the servers (no cross-server-resumption).
  const auto module = debian_mail_module();
  if (!module) return;
  auto v = nginx_version_for("1.22");
  const auto mail = tmp.write(
      "mail.conf", "load_module " + *module +
                       ";\nevents {}\nmail {\n    auth_http 127.0.0.1:9/auth;\n" + certs +
                       "    ssl_protocols TLSv1.2 TLSv1.3;\n    ssl_verify_client optional;\n"
                       "    ssl_client_certificate " +
                       pki.root_cert +
                       ";\n    server {\n        listen 127.0.0.1:18465 ssl;\n"
                       "        protocol smtp;\n    }\n    server {\n"
                       "        listen 127.0.0.1:18587;\n        listen 127.0.0.1:18465 ssl;\n"
                       "        protocol smtp;\n        starttls on;\n    }\n}\n");
  const int mail_line = 16;
  const std::string out = nginx_t(v, tmp.path(), mail);
  CHECK_MESSAGE(out.find("duplicate \"127.0.0.1:18465\" address and port pair in " + mail.string() +
                         ":" + std::to_string(mail_line)) != std::string::npos,
                out);
  auto r = run({ngxtls_binary(), "lint", mail.string(), "--format", "json", "--nginx-version",
                "1.22.1", "--openssl-version", "3.0.19"},
               "", 60);
  const auto doc = json::parse(r.out);
  const auto found = messages_at(doc, "duplicate-listen", mail_line);
  REQUIRE(found.size() == 1);
  CHECK(found[0].rfind("duplicate \"127.0.0.1:18465\" address and port pair: nginx refuses", 0) ==
        0);
  CHECK(count_rule(doc, "cross-server-resumption") == 0);
  CHECK(r.exit_code == 1);
}

TEST_CASE(
    "a certificate path with a variable nginx does not know is an error nginx -t confirms and a "
    "known one is a note") {
  temp_dir tmp;
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  struct scenario {
    std::string name;
    std::string servers;
    std::string unknown;  ///< the variable nginx -t calls unknown; "" = nginx -t accepts it
    int line;             ///< the certificate directive's line
  };
  const std::string key = "        ssl_certificate_key " + pki.leaf_key + ";\n";
  const std::vector<scenario> cases = {
      {"undefined",
       "    server {\n        listen 18443 ssl;\n        ssl_certificate /nonexistent/$foo.pem;\n" +
           key + "    }\n",
       "foo", 11},
      {"set-elsewhere",
       "    server {\n        listen 18443 ssl;\n        ssl_certificate "
       "/nonexistent/$made.pem;\n" +
           key +
           "    }\n    server {\n        listen 18080;\n        location / { set $made x; }\n"
           "    }\n",
       "", 11},
      {"builtin",
       "    server {\n        listen 18443 ssl;\n"
       "        ssl_certificate /nonexistent/$ssl_server_name-$http_x_a.pem;\n" +
           key + "    }\n",
       "", 11},
  };
  for (const auto& v : installed_nginx()) {
    for (const auto& c : cases) {
      INFO("nginx " << v.version << ": " << c.name);
      const auto conf =
          tmp.write(c.name + "-" + v.slot + ".conf",
                    "events {}\nhttp {\n" + quiet_http(tmp.path()) + c.servers + "}\n");
      const std::string out = nginx_t(v, tmp.path(), conf);
      const auto doc = lint_as(v, conf);
      if (c.unknown.empty()) {
        CHECK_MESSAGE(out.find("test is successful") != std::string::npos, out);
        CHECK(count_rule(doc, "certificate-variable-unknown") == 0);
        CHECK(messages_at(doc, "certificate-variable", c.line).size() == 1);
      } else {
        const std::string says = "unknown \"" + c.unknown + "\" variable";
        CHECK_MESSAGE(out.find("[emerg] " + says + "\n") != std::string::npos, out);
        const auto found = messages_at(doc, "certificate-variable-unknown", c.line);
        REQUIRE(found.size() == 1);
        CHECK(found[0].rfind(says + ": nginx refuses to start", 0) == 0);
        CHECK(count_rule(doc, "certificate-variable") == 0);
      }
    }
  }
}

namespace {

/// The context lint reads `file` in (input_contexts[0].context; "main" when none is listed),
/// and the findings of `rule`.
std::pair<std::string, std::size_t> context_and_count(const std::filesystem::path& file,
                                                      const std::string& rule,
                                                      const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{"lint", file.string(), "--format", "json", "--fail-on", "never"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = ngxtls_run(args);
  INFO(r.err);
  const json doc = json::parse(r.out);
  const std::string ctx = doc["input_contexts"].empty()
                              ? "main"
                              : doc["input_contexts"][0]["context"].get<std::string>();
  return {ctx, count_rule(doc, rule)};
}

}  // namespace

TEST_CASE(
    "a file of mail servers is read inside mail where nginx includes it: no unknown directive, "
    "no HSTS") {
  const auto module = debian_mail_module();
  temp_dir tmp;
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  // No mail-only directive at the top level: only inside the servers.
  const auto file = tmp.write(
      "conf.mail.d/imap.conf",
      "server {\n    listen 127.0.0.1:18993 ssl;\n    protocol imap;\n    imap_auth plain;\n"
      "    ssl_certificate " +
          pki.chain + ";\n    ssl_certificate_key " + pki.leaf_key +
          ";\n}\nserver {\n    listen 127.0.0.1:18587;\n    protocol smtp;\n"
          "    smtp_auth login plain;\n    starttls on;\n    ssl_certificate " +
          pki.chain + ";\n    ssl_certificate_key " + pki.leaf_key + ";\n}\n");
  CHECK(context_and_count(file, "unknown-directive") ==
        std::pair<std::string, std::size_t>{"mail", 0});
  CHECK(context_and_count(file, "hsts-missing").second == 0);
  auto text = ngxtls_run({"lint", file.string()});
  CHECK(text.out.find(file.string() + ": read inside mail { }") != std::string::npos);
  CHECK(text.out.find("holds \"protocol\"") != std::string::npos);
  if (!module) return;
  // nginx reads it there without complaint.
  const auto main =
      tmp.write("nginx.conf", "load_module " + *module +
                                  ";\nevents {}\nmail {\n    auth_http 127.0.0.1:9/auth;\n"
                                  "    include conf.mail.d/*.conf;\n}\n");
  CHECK(nginx_t(nginx_version_for("1.22"), tmp.path(), main).find("test is successful") !=
        std::string::npos);
}

TEST_CASE("stream-only shapes are read inside stream: ssl_preread and listen udp") {
  temp_dir tmp;
  const auto preread = tmp.write(
      "a/preread.conf",
      "map $ssl_preread_server_name $backend {\n    default 127.0.0.1:9;\n}\n"
      "server {\n    listen 127.0.0.1:18445;\n    ssl_preread on;\n    proxy_pass $backend;\n}\n");
  CHECK(context_and_count(preread, "unknown-directive").first == "stream");
  const auto udp = tmp.write(
      "b/dns.conf",
      "upstream dns {\n    server 127.0.0.1:53;\n}\nserver {\n    listen 127.0.0.1:18053 udp;\n"
      "    proxy_responses 1;\n    proxy_pass dns;\n}\n");
  CHECK(context_and_count(udp, "unknown-directive").first == "stream");
  // An http server (a location, a return with a status) stays in http.
  const auto web = tmp.write(
      "c/web.conf", "server {\n    listen 80;\n    return 301 https://$host$request_uri;\n}\n");
  CHECK(context_and_count(web, "unknown-directive").first == "http");
}

TEST_CASE(
    "the include site decides the context of a site file, --context overrides it, and nginx -t "
    "agrees") {
  temp_dir tmp;
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  // Nothing in its shape says stream: a TLS server that answers with a fixed value.
  const auto file =
      tmp.write("streams-enabled/hello.conf",
                "server {\n    listen 127.0.0.1:18446 ssl;\n    ssl_certificate " + pki.chain +
                    ";\n    ssl_certificate_key " + pki.leaf_key +
                    ";\n    ssl_protocols TLSv1.2 TLSv1.3;\n    return \"hello\";\n}\n");
  CHECK(context_and_count(file, "directive-not-allowed-here").first == "http");
  for (const auto& v : installed_nginx()) {
    INFO("nginx " << v.version);
    auto head = stream_head(v);
    if (!head) continue;
    const auto main =
        tmp.write("nginx.conf", *head + "stream {\n    include streams-enabled/*.conf;\n}\n");
    auto r = ngxtls_run({"lint", file.string(), "--format", "json", "--fail-on", "never"});
    const json doc = json::parse(r.out);
    REQUIRE(doc["input_contexts"].size() == 1);
    CHECK(doc["input_contexts"][0]["context"] == "stream");
    CHECK(doc["input_contexts"][0]["why"].get<std::string>().find(
              main.string() + " includes it inside stream { }") != std::string::npos);
    CHECK(nginx_t(v, tmp.path(), main).find("test is successful") != std::string::npos);
    // --context overrides the include site, and says so.
    auto forced = json::parse(ngxtls_run({"lint", file.string(), "--format", "json", "--fail-on",
                                          "never", "--context", "http"})
                                  .out);
    CHECK(forced["input_contexts"][0]["context"] == "http");
    CHECK(forced["input_contexts"][0]["why"].get<std::string>().find("--context http") !=
          std::string::npos);
    std::filesystem::remove(main);
  }
  auto bad = ngxtls_run({"lint", file.string(), "--context", "location"});
  CHECK(bad.exit_code == 2);
}

TEST_CASE("check --sandbox reads a site file inside the block lint reads it in: nginx -t passes") {
  temp_dir tmp;
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  const auto file =
      tmp.write("conf.d/app.conf",
                "server {\n    listen 127.0.0.1:18447 ssl;\n    server_name app.test;\n"
                "    ssl_certificate " +
                    pki.chain + ";\n    ssl_certificate_key " + pki.leaf_key +
                    ";\n    ssl_protocols TLSv1.2 TLSv1.3;\n"
                    "    location / {\n        return 200 \"ok\\n\";\n    }\n}\n");
  for (const auto& v : installed_nginx()) {
    INFO("nginx " << v.version);
    auto r = run({ngxtls_binary(), "check", file.string(), "--sandbox", "--nginx", v.binary, "-n",
                  "2", "--no-ocsp", "--format", "json", "--fail-on", "never"},
                 "", 120);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    const json doc = json::parse(r.out);
    CHECK(doc["input_contexts"][0]["context"] == "http");
    // nginx -t of the whole file, inside http as lint reads it.
    REQUIRE(doc.contains("nginx_test"));
    const std::string verdict = doc["nginx_test"]["verdict"].get<std::string>();
    CHECK_MESSAGE((verdict == "passed" || verdict == "skipped"), doc["nginx_test"].dump());
    if (verdict == "skipped") std::cout << "NGXTLS_SKIP: " << doc["nginx_test"].dump() << std::endl;
  }
}

TEST_CASE(
    "mail: ssl on with starttls on is the error nginx -t gives, and listen ssl with starttls is "
    "fine") {
  const auto module = debian_mail_module();
  if (!module) return;
  auto v = nginx_version_for("1.22");
  temp_dir tmp;
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  const std::string head =
      "load_module " + *module + ";\nevents {}\nmail {\n    auth_http 127.0.0.1:9/auth;\n";
  const std::string certs = "        ssl_certificate " + pki.chain +
                            ";\n        ssl_certificate_key " + pki.leaf_key + ";\n";
  const auto conflict =
      tmp.write("conflict.conf", head +
                                     "    server {\n        listen 127.0.0.1:18143;\n"
                                     "        protocol imap;\n" +
                                     certs + "        ssl on;\n        starttls on;\n    }\n}\n");
  const std::string out = nginx_t(v, tmp.path(), conflict);
  CHECK_MESSAGE(out.find("\"ssl\" directive conflicts with \"starttls\" in " + conflict.string() +
                         ":11") != std::string::npos,
                out);
  auto doc = json::parse(
      ngxtls_run({"lint", conflict.string(), "--format", "json", "--fail-on", "never"}).out);
  auto at11 = messages_at(doc, "obsolete-directive", 11);
  REQUIRE(at11.size() == 1);
  CHECK(at11[0].find("\"ssl\" directive conflicts with \"starttls\"") != std::string::npos);
  const auto both =
      tmp.write("both.conf", head +
                                 "    server {\n        listen 127.0.0.1:18143;\n"
                                 "        listen 127.0.0.1:18993 ssl;\n        protocol imap;\n" +
                                 certs + "        starttls on;\n    }\n}\n");
  CHECK(nginx_t(v, tmp.path(), both).find("test is successful") != std::string::npos);
  auto doc2 = json::parse(
      ngxtls_run({"lint", both.string(), "--format", "json", "--fail-on", "never"}).out);
  CHECK(count_rule(doc2, "obsolete-directive") == 0);
}

TEST_CASE("a stream server with a certificate and no listen ssl serves plaintext") {
  temp_dir tmp;
  auto pki = tls::make_pki((tmp.path() / "pki").string(), {});
  for (const auto& v : installed_nginx()) {
    INFO("nginx " << v.version);
    auto head = stream_head(v);
    if (!head) continue;
    const int port = free_port();
    const std::string stream_block =
        "stream {\n    server {\n        listen 127.0.0.1:" + std::to_string(port) +
        ";\n        return \"hello\";\n        ssl_certificate " + pki.chain +
        ";\n        ssl_certificate_key " + pki.leaf_key + ";\n    }\n}\n";
    // nginx_t names the pid file itself; the running instance needs one in its prefix.
    const auto conf = tmp.write("nginx.conf", *head + stream_block);
    const std::string text = *head + "pid nginx.pid;\nerror_log error.log;\n" + stream_block;
    CHECK(nginx_t(v, tmp.path(), conf).find("test is successful") != std::string::npos);
    nginx_options o;
    o.binary = v.binary;
    o.wait_ports = {port};
    {
      nginx_instance ngx(text, o);
      auto r =
          run({"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port)}, "", 20);
      CHECK((r.out + r.err).find("wrong version number") != std::string::npos);
    }
    auto doc = json::parse(
        ngxtls_run({"lint", conf.string(), "--format", "json", "--fail-on", "never"}).out);
    const auto line = head->find("load_module") == std::string::npos ? 4 : 5;
    CHECK(messages_at(doc, "certificate-without-tls", line).size() == 1);
  }
}
