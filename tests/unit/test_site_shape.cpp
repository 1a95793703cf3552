// config/site_files: the block a file is read in, and what `lint DIR` reads, within its bounds.
#include <doctest/doctest.h>

#include <filesystem>

#include "base/error.hpp"
#include "config/site_files.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;

namespace {

config::config site(const test::temp_dir& tmp, const std::string& name, const std::string& text) {
  return config::load_site_file(tmp.write(name, text).string(), {});
}

}  // namespace

TEST_CASE("the top level decides the block a file is read in, and the tree keeps its lines") {
  test::temp_dir tmp;
  auto main =
      site(tmp, "nginx.conf", "user www-data;\nevents {}\nhttp { server { listen 80; } }\n");
  CHECK(main.implied == config::implied_context::none);
  auto http = site(tmp, "a.conf", "map $a $b { default 1; }\nserver {\n    listen 443 ssl;\n}\n");
  CHECK(http.implied == config::implied_context::http);
  REQUIRE(http.root.size() == 1);
  CHECK(http.root[0].name == "http");
  CHECK(http.root[0].line == 1);  // placed at the first directive it holds
  REQUIRE(http.root[0].block.size() == 2);
  CHECK(http.root[0].block[1].line == 2);  // the server, where the file has it
  auto ssl_only = site(tmp, "ssl.conf", "ssl_protocols TLSv1.2 TLSv1.3;\n");
  CHECK(ssl_only.implied == config::implied_context::http);
  auto server = site(tmp, "s.conf", "listen 443 ssl;\nssl_certificate c.pem;\n");
  CHECK(server.implied == config::implied_context::http_server);
  CHECK(server.root[0].block[0].name == "server");
  auto stream = site(tmp, "db.conf", "server { listen 5432; proxy_pass 10.0.0.1:5432; }\n");
  CHECK(stream.implied == config::implied_context::stream);
  // An http-only directive, or a proxy_pass with a scheme, keeps it in http.
  auto mixed = site(tmp, "m.conf", "server { listen 8080; proxy_pass 10.0.0.1:80; root /srv; }\n");
  CHECK(mixed.implied == config::implied_context::http);
  auto loc = site(tmp, "p.conf", "proxy_pass http://app;\n");
  CHECK(loc.implied == config::implied_context::http_location);
  CHECK(loc.root[0].block[0].block[0].name == "location");
  CHECK(loc.root[0].block[0].block[0].args[0].value() == "/");
  // In conf.d/, relative includes resolve against its parent (where nginx.conf sits).
  tmp.write("etc/snippets/tls.conf", "ssl_certificate c.pem;\n");
  auto inc = site(tmp, "etc/conf.d/x.conf", "server { include snippets/tls.conf; }\n");
  CHECK(inc.files.size() == 2);
}

TEST_CASE("lint DIR lists files sorted and recursively, the usual names only, within its bounds") {
  test::temp_dir tmp;
  tmp.write("d/conf.d/b.conf", "server { listen 81; }\n");
  tmp.write("d/conf.d/a.conf", "server { listen 80; }\n");
  tmp.write("d/sites-enabled/app", "server { listen 82; }\n");
  tmp.write("d/notes.txt", "x\n");
  tmp.write("d/.hidden.conf", "x;\n");
  fs::create_symlink(tmp.path() / "d/conf.d/a.conf", tmp.path() / "d/conf.d/z.conf");
  const std::string dir = (tmp.path() / "d").string();
  auto plan = config::plan_directory(dir, {});
  CHECK_FALSE(plan.nginx_conf);
  CHECK(plan.files == std::vector<std::string>{dir + "/conf.d/a.conf", dir + "/conf.d/b.conf",
                                               dir + "/sites-enabled/app"});
  REQUIRE(plan.skipped.size() == 3);
  CHECK(plan.skipped[0].path == dir + "/.hidden.conf");
  CHECK(plan.skipped[1].path == dir + "/conf.d/z.conf");  // the same file as a.conf
  CHECK(plan.skipped[2].path == dir + "/notes.txt");
  // One shared http block holds every site file's servers.
  config::directory_plan used;
  auto cfg = config::load_directory(dir, {}, used);
  REQUIRE(cfg.root.size() == 1);
  CHECK(cfg.root[0].name == "http");
  CHECK(cfg.root[0].block.size() == 3);
  // Bounded: file count and directory entries.
  config::load_options few;
  few.max_included_files = 2;
  try {
    config::plan_directory(dir, few);
    FAIL("no error");
  } catch (const input_error& e) {
    CHECK(e.message() == "more than 2 configuration files (max_included_files)");
  }
  config::load_options entries;
  entries.max_glob_entries = 3;
  CHECK_THROWS_AS(config::plan_directory(dir, entries), input_error);
}

TEST_CASE("a file of mail directives and servers is read inside mail { }") {
  test::temp_dir tmp;
  auto mail = site(tmp, "mail.conf",
                   "auth_http 127.0.0.1:9000/auth;\nsmtp_capabilities PIPELINING 8BITMIME;\n"
                   "server {\n    listen 465 ssl;\n    protocol smtp;\n    starttls on;\n}\n");
  CHECK(mail.implied == config::implied_context::mail);
  REQUIRE(mail.root.size() == 1);
  CHECK(mail.root[0].name == "mail");
  CHECK(mail.root[0].block.size() == 3);
  CHECK(mail.implied_reason.find("\"auth_http\"") != std::string::npos);
  CHECK(config::context_name(mail.implied) == "mail");
  // A mail body that starts with server_name (a mail block takes it too) is still mail.
  auto named = site(tmp, "named.conf",
                    "server_name mail.example.test;\nauth_http 127.0.0.1:9000/auth;\n"
                    "server {\n    listen 465 ssl;\n    protocol smtp;\n}\n");
  CHECK(named.implied == config::implied_context::mail);
  // A mail-only directive inside a server block makes the file mail too (nginx has no
  // `protocol` in http: read as http it would be an unknown directive).
  auto proto = site(tmp, "p.conf", "server {\n    listen 110;\n    protocol pop3;\n}\n");
  CHECK(proto.implied == config::implied_context::mail);
  CHECK(proto.implied_reason.find("\"protocol\"") != std::string::npos);
  // In a folder of site files, a mail file goes into one shared mail { }.
  tmp.write("d/a.conf", "server { listen 443 ssl; }\n");
  tmp.write("d/m.conf", "imap_capabilities IMAP4rev1;\nserver { listen 993 ssl; }\n");
  config::directory_plan plan;
  auto dir = config::load_directory((tmp.path() / "d").string(), {}, plan);
  REQUIRE(dir.root.size() == 2);
  CHECK(dir.root[0].name == "http");
  CHECK(dir.root[1].name == "mail");
}

TEST_CASE("a site file's relative include that is not there is reported, not an input error") {
  test::temp_dir tmp;
  const std::string text =
      "server {\n    listen 443 ssl;\n    location / {\n        include fastcgi_params;\n"
      "        fastcgi_pass 127.0.0.1:9000;\n    }\n}\n";
  auto cfg = site(tmp, "contrib/nginx.conf", text);
  CHECK(cfg.implied == config::implied_context::http);
  REQUIRE(cfg.missing_includes.size() == 1);
  CHECK(cfg.missing_includes[0].path == (tmp.path() / "contrib/fastcgi_params").string());
  CHECK(cfg.missing_includes[0].include.line == 4);
  CHECK(cfg.missing_includes[0].include.column == 9);
  // The same in a folder of site files read without --conf-prefix.
  tmp.write("sites/app.conf", text);
  config::directory_plan plan;
  auto dir = config::load_directory((tmp.path() / "sites").string(), {}, plan);
  CHECK(dir.missing_includes.size() == 1);
  // With --conf-prefix the prefix is known: a missing include stops nginx, and the lint.
  config::load_options known;
  known.conf_prefix = tmp.path().string();
  CHECK_THROWS_AS(config::load_site_file((tmp.path() / "contrib/nginx.conf").string(), known),
                  input_error);
  // A main nginx.conf is its own conf prefix: the same.
  CHECK_THROWS_AS(site(tmp, "etc/nginx.conf", "events {}\nhttp {\n    include mime.types;\n}\n"),
                  input_error);
  // An absolute include that is not there is not a guess about the prefix: still an error.
  CHECK_THROWS_AS(site(tmp, "x/app.conf", "server { include /nonexistent/ngxtls/params; }\n"),
                  input_error);
}
