// `ngxtls harden` from the command line: exit codes, JSON, and the printed text (header
// comments included) accepted by the real nginx -t.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "support/nginx_run.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"
#include "tls/ticket_key.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

command_result harden(std::vector<std::string> args) {
  args.insert(args.begin(), {ngxtls_binary(), "harden"});
  return run(args, "", 30);
}

}  // namespace

TEST_CASE(
    "ngxtls harden --format json describes the snippet, and tickets default to fleet with a key "
    "dir") {
  temp_dir dir;
  auto r = harden({"--nginx-version", "1.22.1", "--openssl-version", "3.0.19", "--ticket-key-dir",
                   (dir.path() / "tickets").string(), "--format", "json"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("profile") == "intermediate");
  CHECK(j.at("tickets") == "fleet");
  CHECK(j.at("nginx_version") == "1.22.1");
  CHECK(j.at("openssl_version") == "3.0.19");
  CHECK(j.at("versions_source").get<std::string>().find("--nginx-version") != std::string::npos);
  CHECK(j.at("rotation").size() == 6);  // keys missing: step 0 first
  CHECK(j.at("config").get<std::string>().find("listen 443 ssl http2;") != std::string::npos);

  r = harden({"--profile", "modern", "--nginx-version", "1.27.3", "--openssl-version", "3.5",
              "--format", "json"});
  REQUIRE(r.exit_code == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j.at("tickets") == "host");
  CHECK(j.at("config").get<std::string>().find(
            "ssl_ecdh_curve X25519MLKEM768:X25519:prime256v1:secp384r1;") != std::string::npos);
}

TEST_CASE("ngxtls harden usage errors exit 2") {
  CHECK(harden({"--profile", "old"}).exit_code == 2);
  CHECK(harden({"--tickets", "fleet", "--nginx-version", "1.22.1"}).exit_code == 2);
  CHECK(harden({"--nginx-version", "1.22.1", "--cert", "/nonexistent/cert.pem"}).exit_code == 2);
  CHECK(harden({"--nginx-version", "1.22.1", "--openssl-version", "1.1.0", "--profile", "modern"})
            .exit_code == 2);
}

TEST_CASE("the printed text, header comments and all, passes the real nginx -t") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  const auto keys = dir.path() / "tickets";
  std::filesystem::create_directories(keys);
  tls::write_ticket_key_file((keys / "current.key").string(), 80);
  tls::write_ticket_key_file((keys / "previous.key").string(), 80);
  auto r = harden({"--nginx-version", "1.22.1", "--openssl-version", "3.0", "--ticket-key-dir",
                   keys.string(), "--cert", pki.chain, "--key", pki.leaf_key});
  REQUIRE(r.exit_code == 0);
  std::string text = r.out;
  // The test's only changes: a free loopback port, and logs and temp files inside the prefix.
  const int port = free_port();
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"listen 443 ssl", "127.0.0.1"}, {"listen [::]:443 ssl", "127.0.0.2"}}) {
    auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), "listen " + to + ":" + std::to_string(port) + " ssl");
  }
  auto http = text.find("\nhttp {\n");
  REQUIRE(http != std::string::npos);
  text.insert(
      http + 8,
      "    access_log off;\n    client_body_temp_path tmp_body;\n    proxy_temp_path tmp_proxy;\n"
      "    fastcgi_temp_path tmp_fastcgi;\n    uwsgi_temp_path tmp_uwsgi;\n    scgi_temp_path "
      "tmp_scgi;\n");
  dir.write("prefix/nginx.conf", "pid nginx.pid;\nerror_log error.log;\nevents {}\n" + text);
  const std::string p = (dir.path() / "prefix").string() + "/";
  auto t = run_nginx({"/usr/sbin/nginx", "-t", "-p", p, "-c", p + "nginx.conf"}, "", 20);
  CAPTURE(text);
  CAPTURE(t.err);
  CHECK(t.exit_code == 0);
  CHECK(t.err.find("[warn]") == std::string::npos);
}

TEST_CASE(
    "paths with spaces, quotes, semicolons, braces and $ are quoted: nginx -t reads the same "
    "files") {
  temp_dir dir;
  // The ticket key directory may hold `$` (ssl_session_ticket_key takes no variables); the
  // certificate's may not (nginx reads `$x` there as a variable).
  const auto keys = dir.path() / "ke ys;{\"'$x}";
  const auto certs = dir.path() / "ce rts;{\"'#}";
  std::filesystem::create_directories(keys);
  auto pki = tls::make_pki(certs.string(), {});
  auto r = harden({"--nginx-version", "1.22.1", "--openssl-version", "3.0", "--ticket-key-dir",
                   keys.string(), "--cert", pki.chain, "--key", pki.leaf_key, "--format", "json"});
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  // Step 0 of the rotation makes the key files: run its commands in a shell, as the operator would.
  const auto& step0 = j.at("rotation").at(0).at("commands");
  std::string script;
  for (const auto& c : step0)
    if (c.get<std::string>().rfind("openssl rand", 0) == 0 || c == "umask 077")
      script += c.get<std::string>() + "\n";
  auto sh = run({"sh", "-e", "-c", script});
  CAPTURE(script);
  CHECK(sh.exit_code == 0);
  CHECK(std::filesystem::file_size(keys / "current.key") == 80);
  CHECK(std::filesystem::file_size(keys / "previous.key") == 80);

  std::string text = j.at("config").get<std::string>();
  const int port = free_port();
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"listen 443 ssl", "127.0.0.1"}, {"listen [::]:443 ssl", "127.0.0.2"}}) {
    auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), "listen " + to + ":" + std::to_string(port) + " ssl");
  }
  auto http = text.find("http {\n");
  REQUIRE(http != std::string::npos);
  text.insert(
      http + 7,
      "    access_log off;\n    client_body_temp_path tmp_body;\n    proxy_temp_path tmp_proxy;\n"
      "    fastcgi_temp_path tmp_fastcgi;\n    uwsgi_temp_path tmp_uwsgi;\n    scgi_temp_path "
      "tmp_scgi;\n");
  const auto conf =
      dir.write("prefix/nginx.conf", "pid nginx.pid;\nerror_log error.log;\nevents {}\n" + text);
  const std::string p = (dir.path() / "prefix").string() + "/";
  auto t = run_nginx({"/usr/sbin/nginx", "-t", "-p", p, "-c", p + "nginx.conf"}, "", 20);
  CAPTURE(text);
  CAPTURE(t.err);
  CHECK(t.exit_code == 0);
  // Each path reads back as given.
  auto parsed = run({ngxtls_binary(), "parse", conf.string()});
  REQUIRE(parsed.exit_code == 0);
  std::multiset<std::string> values;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& list) {
    for (const auto& d : list) {
      const std::string name = d.at("name");
      if (name == "ssl_session_ticket_key" || name == "ssl_certificate" ||
          name == "ssl_certificate_key" || name == "ssl_trusted_certificate")
        values.insert(name + " " + d.at("args").at(0).at("value").get<std::string>());
      if (d.contains("block")) walk(d.at("block"));
    }
  };
  walk(nlohmann::json::parse(parsed.out).at("directives"));
  CHECK(values.count("ssl_session_ticket_key " + (keys / "current.key").string()) == 1);
  CHECK(values.count("ssl_session_ticket_key " + (keys / "previous.key").string()) == 1);
  CHECK(values.count("ssl_certificate " + pki.chain) == 1);
  CHECK(values.count("ssl_certificate_key " + pki.leaf_key) == 1);

  // `$` where nginx reads variables, and a line feed anywhere, cannot be written: usage errors.
  r = harden({"--nginx-version", "1.22.1", "--cert", (keys / "c.pem").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("nginx reads `$` in this directive as a variable") != std::string::npos);
  r = harden(
      {"--nginx-version", "1.22.1", "--ticket-key-dir", "/etc/nginx/x\nssl_session_tickets off;"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("control character") != std::string::npos);
}

TEST_CASE("ngxtls harden --upstream: bad NAME, ADDRESS or HOST exits 2 naming the argument") {
  struct bad {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<bad> cases{
      {{"--upstream", "api"}, "--upstream api: expected NAME=ADDRESS"},
      {{"--upstream", "api=10.0.0.5"}, "--upstream api=10.0.0.5: ADDRESS `10.0.0.5` needs a port"},
      {{"--upstream", "api=backend.internal"}, "is port 80, not 443"},
      {{"--upstream", "api=10.0.0.5:0"}, "is not a number from 1 to 65535"},
      {{"--upstream", "api=10.0.0.5:99999"}, "is not a number from 1 to 65535"},
      {{"--upstream", "api=::1:443"}, "an IPv6 address goes in brackets"},
      {{"--upstream", "api=[::1:443"}, "opens `[` without closing it"},
      {{"--upstream", "api=10.0.0.5:443;"}, "holds white space or one of"},
      {{"--upstream", "a$b=10.0.0.5:443"}, "NAME `a$b` must be letters"},
      {{"--upstream", "=10.0.0.5:443"}, "NAME `` must be letters"},
      {{"--upstream", "tls_sessions=10.0.0.5:443"}, "session cache zone"},
      {{"--upstream", "api=unix:sock"}, "unix:/absolute/path"},
      {{"--upstream", "api=10.0.0.5:443", "--upstream", "api=10.0.0.5:443"},
       "10.0.0.5:443 is already a server of api"},
      // nginx -t: duplicate upstream "BE" (1.22.1, 1.26.3, 1.30.6).
      {{"--upstream", "be=10.0.0.5:443", "--upstream", "BE=10.0.0.6:443"},
       "BE and be are one upstream name to nginx"},
      {{"--upstream", "api=10.0.0.5:443", "--upstream-ssl-name", "web=web.internal"},
       "--upstream-ssl-name web=web.internal: no --upstream web=ADDRESS"},
      {{"--upstream", "api=10.0.0.5:443", "--upstream-ssl-name", "api=a b"},
       "HOST `a b` must be a host name"},
      {{"--upstream", "api=10.0.0.5:443", "--upstream-keepalive", "0"}, "--upstream-keepalive"},
      // nginx -t on 1.26.3: `invalid IPv6 address in upstream "[zz]:443"`, `host not found in
      // upstream "999.1.1.1:443"`, `too long path in the unix domain socket` from 108 bytes.
      {{"--upstream", "api=[zz]:443"}, "`[zz]` is not an IPv6 address"},
      {{"--upstream", "api=[fe80::1%eth0]:443"}, "is not an IPv6 address"},
      {{"--upstream", "api=999.1.1.1:443"}, "`999.1.1.1` is not an IPv4 address"},
      {{"--upstream", "api=unix:/" + std::string(107, 's')}, "the socket path is 108 bytes"},
      // The block options without a block to shape.
      {{"--upstream-ca", "/etc/nginx/backend-ca.pem"}, "give --upstream too"},
      {{"--upstream-keepalive", "8"}, "give --upstream too"},
      {{"--upstream-ssl-name", "api=api.internal"}, "give --upstream too"},
  };
  for (const auto& c : cases) {
    auto args = c.args;
    args.insert(args.begin(), {"--nginx-version", "1.22.1"});
    const auto r = harden(args);
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(r.out.empty());
  }
}

TEST_CASE("ngxtls harden --upstream writes the upstream block and the location, text and JSON") {
  auto r = harden({"--nginx-version", "1.26.3", "--upstream", "api=10.0.0.5:8443", "--upstream",
                   "api=[fd00::6]:8443", "--upstream", "auth=auth.internal:443",
                   "--upstream-ssl-name", "api=api.internal", "--upstream-ca",
                   "/etc/nginx/backend ca.pem", "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.at("upstreams").size() == 2);
  CHECK(j.at("upstreams")[0].at("name") == "api");
  CHECK(j.at("upstreams")[0].at("location") == "/api/");
  CHECK(j.at("upstreams")[1].at("location") == "/auth/");
  const auto config = j.at("config").get<std::string>();
  for (const std::string line :
       {"    upstream api {\n        zone api 64k;", "        server 10.0.0.5:8443;",
        "        server [fd00::6]:8443;", "        keepalive 16;", "keepalive_requests 1000;",
        "keepalive_timeout 60s;", "        location /api/ {\n            proxy_pass https://api;",
        "proxy_http_version 1.1;", "proxy_set_header Connection \"\";",
        "proxy_ssl_protocols TLSv1.2 TLSv1.3;", "proxy_ssl_session_reuse on;",
        "proxy_ssl_verify on;", "proxy_ssl_trusted_certificate \"/etc/nginx/backend ca.pem\";",
        "proxy_ssl_name api.internal;", "proxy_ssl_name auth.internal;",
        "proxy_ssl_server_name on;"}) {
    CAPTURE(line);
    CHECK(config.find(line) != std::string::npos);
  }
  // nginx 1.30 sends no Connection header: the snippet leaves the header list alone there.
  r = harden({"--nginx-version", "1.30.6", "--upstream", "api=10.0.0.5:8443"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("    proxy_set_header Connection") == std::string::npos);
  CHECK(r.out.find("location / {") != std::string::npos);
  CHECK(r.out.find("proxy_ssl_name api;") != std::string::npos);  // nginx's default name
  CHECK(r.out.find("WARNING: proxy_ssl_trusted_certificate is a placeholder") != std::string::npos);
}

TEST_CASE("ngxtls harden --upstream takes what nginx takes and warns of a CA nginx will not find") {
  // nginx -t (1.26.3) accepts a 107-byte socket path and 1.2.3 (glibc reads it as 1.2.0.3).
  for (const std::string& address : {"unix:/" + std::string(106, 's'), std::string("1.2.3:443"),
                                     std::string("[::ffff:1.2.3.4]:443")}) {
    CAPTURE(address);
    const auto r = harden({"--nginx-version", "1.26.3", "--upstream", "api=" + address,
                           "--upstream-ca", "/etc/ssl/certs"});
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.out.find("server " + address + ";") != std::string::npos);
    // /etc/ssl/certs is a directory: nginx wants a file.
    CHECK(r.out.find("WARNING: --upstream-ca /etc/ssl/certs is not a file on this machine") !=
          std::string::npos);
  }
  // A relative CA is read from nginx.conf's directory (measured: -c D/conf/nginx.conf with
  // `proxy_ssl_trusted_certificate ca.pem` fails on D/conf/ca.pem, 1.26.3 and 1.30.6).
  auto r = harden({"--nginx-version", "1.26.3", "--upstream", "api=10.0.0.5:443", "--upstream-ca",
                   "backend-ca.pem"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("WARNING: --upstream-ca backend-ca.pem is a relative path") !=
        std::string::npos);
  // A CA that is a file here: no warning about it.
  temp_dir d;
  d.write("ca.pem", "not read by harden\n");
  r = harden({"--nginx-version", "1.26.3", "--upstream", "api=10.0.0.5:443", "--upstream-ca",
              (d.path() / "ca.pem").string()});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("WARNING: --upstream-ca") == std::string::npos);
  CHECK(r.out.find("WARNING: proxy_ssl_trusted_certificate") == std::string::npos);
  // Two host names in one block: the one proxy_ssl_name is checked against both.
  r = harden({"--nginx-version", "1.26.3", "--upstream", "api=a.internal:443", "--upstream",
              "api=b.internal:443"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("proxy_ssl_name a.internal;") != std::string::npos);
  CHECK(r.out.find("is checked against every server of api, b.internal too") != std::string::npos);
  r = harden({"--nginx-version", "1.26.3", "--upstream", "api=a.internal:443", "--upstream",
              "api=b.internal:443", "--upstream-ssl-name", "api=api.internal"});
  CHECK(r.out.find("is checked against every server") == std::string::npos);
}
