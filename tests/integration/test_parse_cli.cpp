// `ngxtls parse`: formats, exit codes, stdin (plain config or `nginx -T` dump).

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support/nginx_run.hpp"
#include "support/process.hpp"

using ngxtls::test::ngxtls_binary;
using ngxtls::test::run;
using ngxtls::test::run_nginx;
using ngxtls::test::temp_dir;

TEST_CASE("parse prints crossplane's shape with includes and exits 0") {
  temp_dir t;
  const auto main =
      t.write("nginx.conf", "http {\n  include conf.d/*.conf;\n  if ($a) { return 403; }\n}\n");
  t.write("conf.d/a.conf", "server { content_by_lua_block { ngx.say('}') } }\n");
  auto r = run({ngxtls_binary(), "parse", "--format", "crossplane", main.string()});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["status"] == "ok");
  REQUIRE(j["config"].size() == 2);
  const auto& http = j["config"][0]["parsed"][0];
  CHECK(http["block"][0]["directive"] == "include");
  CHECK(http["block"][0]["includes"] == nlohmann::json::array({1}));
  // crossplane's if: the parentheses are not args.
  CHECK(http["block"][1]["args"] == nlohmann::json::array({"$a"}));
  const auto& lua = j["config"][1]["parsed"][0]["block"][0];
  CHECK(lua["args"] == nlohmann::json::array({" ngx.say('}') "}));
  CHECK_FALSE(lua.contains("block"));
}

TEST_CASE("parse --format json prints our tree with columns, quote styles and lua bodies") {
  temp_dir t;
  const auto main = t.write("nginx.conf", "a 'b' \"c\" d;\nset_by_lua_block $x { return 1 }\n");
  auto r = run({ngxtls_binary(), "parse", "--format", "json", main.string()});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  const auto& a = j["directives"][0];
  CHECK(a["args"][0]["quote"] == "single");
  CHECK(a["args"][1]["quote"] == "double");
  CHECK(a["args"][1]["raw"] == "\"c\"");
  CHECK(a["args"][2]["column"] == 11);
  CHECK(j["directives"][1]["lua_body"] == " return 1 ");
}

TEST_CASE("a syntax error exits 2 with FILE:LINE:COL: MESSAGE, and crossplane's failed JSON") {
  temp_dir t;
  const auto bad = t.write("bad.conf", "http {\n  server_name \"a\"b;\n}\n");
  auto r = run({ngxtls_binary(), "parse", bad.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "ngxtls: error: " + bad.string() + ":2:18: unexpected \"b\"\n");
  auto c = run({ngxtls_binary(), "parse", "--format", "crossplane", bad.string()});
  CHECK(c.exit_code == 2);
  auto j = nlohmann::json::parse(c.out);
  CHECK(j["status"] == "failed");
  CHECK(j["errors"][0]["line"] == 2);
  CHECK(j["errors"][0]["error"] == "unexpected \"b\" in " + bad.string() + ":2");
  CHECK(j["config"][0]["parsed"].empty());
}

TEST_CASE("parse - reads a plain config or an nginx -T dump from stdin") {
  auto plain = run({ngxtls_binary(), "parse", "--format", "crossplane", "-"}, "events {}\n");
  REQUIRE(plain.exit_code == 0);
  CHECK(nlohmann::json::parse(plain.out)["config"][0]["parsed"][0]["directive"] == "events");
  const std::string dump =
      "# configuration file /etc/nginx/nginx.conf:\nhttp { include /etc/nginx/x.conf; }\n\n"
      "# configuration file /etc/nginx/x.conf:\nserver_tokens off;\n\n";
  auto d = run({ngxtls_binary(), "parse", "-"}, dump);
  REQUIRE(d.exit_code == 0);
  auto j = nlohmann::json::parse(d.out);
  CHECK(j["files"][1]["path"] == "/etc/nginx/x.conf");
  CHECK(j["directives"][0]["block"][0]["name"] == "server_tokens");
  // An include the dump does not hold was cut from it (nginx -T prints every file it reads):
  // said so at the include, whether or not a file of that name exists on this machine.
  const std::string cut =
      "# configuration file /etc/nginx/nginx.conf:\nevents {}\nhttp { include /etc/passwd; }\n";
  auto c = run({ngxtls_binary(), "parse", "-"}, cut);
  CHECK(c.exit_code == 2);
  CHECK(c.err.find("/etc/nginx/nginx.conf:2:8: \"/etc/passwd\" is not in the nginx -T dump") !=
        std::string::npos);
}

TEST_CASE("parse of the real nginx -T output of this machine's nginx works") {
  auto t = run_nginx({"nginx", "-T", "-q"});
  if (t.exit_code != 0 || t.out.empty()) return;  // no usable system nginx config here
  auto r = run({ngxtls_binary(), "parse", "-"}, t.out);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
}

TEST_CASE("bad input through the CLI: empty file, directory, /dev/null") {
  temp_dir t;
  const auto empty = t.write("empty.conf", "");
  auto e = run({ngxtls_binary(), "parse", "--format", "crossplane", empty.string()});
  CHECK(e.exit_code == 0);
  CHECK(nlohmann::json::parse(e.out)["config"][0]["parsed"].empty());
  auto d = run({ngxtls_binary(), "parse", t.path().string()});
  CHECK(d.exit_code == 2);
  CHECK(d.err.find("Is a directory") != std::string::npos);
  CHECK(run({ngxtls_binary(), "parse", "/dev/null"}).exit_code == 0);
}
