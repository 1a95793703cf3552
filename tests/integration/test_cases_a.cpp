// Kind-A cases of fixtures/cases (fixtures/cases/README.md): each with its expected value, and
// nginx 1.22.1's own `nginx -t` verdict where it proves the expectation.

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "config/loader.hpp"
#include "support/nginx_run.hpp"
#include "support/process.hpp"

namespace {

namespace fs = std::filesystem;
using ngxtls::config::config;
using ngxtls::config::directive;

/// A writable copy of the cases folder, shared by the tests of this file.
const fs::path& cases_copy() {
  static ngxtls::test::temp_dir dir;
  static const fs::path copy = [] {
    const fs::path to = dir.path() / "cases";
    fs::copy(ngxtls::test::cases_dir(), to, fs::copy_options::recursive);
    return to;
  }();
  return copy;
}

std::string case_path(const std::string& name) {
  return (cases_copy() / (name + ".conf")).string();
}

config load_case(const std::string& name) {
  return ngxtls::config::load_file(case_path(name));
}

std::string error_of(const std::string& name) {
  try {
    load_case(name);
  } catch (const ngxtls::input_error& e) {
    return e.what();
  }
  return "no error";
}

/// `nginx -t` on the case: exit code and its [emerg] message, if any.
struct nginx_verdict {
  int exit_code;
  std::string emerg;
};
nginx_verdict nginx_test(const std::string& name) {
  auto r = ngxtls::test::run_nginx(
      {"nginx", "-t", "-q", "-p", cases_copy().string() + "/", "-c", case_path(name)});
  std::smatch m;
  static const std::regex emerg(R"(\[emerg\] \d+#\d+: (.*))");
  std::string first;
  if (std::regex_search(r.err, m, emerg)) first = m[1];
  return {r.exit_code, first};
}

std::vector<std::string> values(const directive& d) {
  std::vector<std::string> out;
  for (const auto& a : d.args) out.emplace_back(a.value());
  return out;
}

/// The first directive named `name`, depth first.
const directive* find(ngxtls::config::list<directive> ds, const std::string& name) {
  for (const auto& d : ds) {
    if (d.name == name) return &d;
    if (auto* f = find(d.block, name)) return f;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("A01: quoted , { } are plain text") {
  CHECK(nginx_test("A01-quoted-brace-semicolon").exit_code == 0);
  auto cfg = load_case("A01-quoted-brace-semicolon");
  CHECK(values(*find(cfg.root, "add_header")) == std::vector<std::string>{"X-Test", "a;b{c}d"});
  CHECK(values(*find(cfg.root, "return")) == std::vector<std::string>{"200", "}"});
}

TEST_CASE("A02: a quoted {6} does not open a block") {
  CHECK(nginx_test("A02-quoted-regex-with-quantifier-braces").exit_code == 0);
  auto cfg = load_case("A02-quoted-regex-with-quantifier-braces");
  const auto* loc = find(cfg.root, "location");
  REQUIRE(loc);
  CHECK(values(*loc) == std::vector<std::string>{"~", "^/(test|[0-9a-zA-Z]{6})$"});
  REQUIRE(loc->block.size() == 2);
  CHECK(loc->block[0].name == "if");
  CHECK(values(loc->block[0]) == std::vector<std::string>{"($query_string", "~", "pid=(111))"});
  CHECK(loc->block[0].block[0].name == "return");
}

TEST_CASE("A04: a , inside quotes belongs to the regex") {
  CHECK(nginx_test("A04-if-regex-with-semicolon-in-quotes").exit_code == 0);
  auto cfg = load_case("A04-if-regex-with-semicolon-in-quotes");
  CHECK(
      values(*find(cfg.root, "if")) ==
      std::vector<std::string>{"($http_user_agent", "~*", "^WordPress.*; verifying pingback", ")"});
}

TEST_CASE("A05: a glob without match is fine, a missing literal include is an error") {
  CHECK(nginx_test("A05-include-glob-no-match").exit_code == 0);
  auto cfg = load_case("A05-include-glob-no-match");
  const auto* http = find(cfg.root, "http");
  REQUIRE(http);
  REQUIRE(http->block.size() == 1);
  CHECK(http->block[0].name == "server");
  const auto v = nginx_test("A05b-include-missing-literal");
  CHECK(v.exit_code != 0);
  const std::string missing = cases_copy().string() + "/A05-empty-glob.d/missing.conf";
  const std::string message = "open() \"" + missing + "\" failed (2: No such file or directory)";
  CHECK(v.emerg == message + " in " + case_path("A05b-include-missing-literal") + ":3");
  CHECK(error_of("A05b-include-missing-literal") ==
        case_path("A05b-include-missing-literal") + ":3:5: " + message);
}

TEST_CASE("A06: a { glued to a token opens a block") {
  CHECK(nginx_test("A06-brace-glued-to-arg").exit_code == 0);
  auto cfg = load_case("A06-brace-glued-to-arg");
  const auto* loc = find(cfg.root, "location");
  REQUIRE(loc);
  CHECK(values(*loc) == std::vector<std::string>{"/x"});
  CHECK(loc->block[0].name == "return");
  CHECK(find(cfg.root, "server")->block.size() == 2);
}

TEST_CASE("A07a: a lua block glued to its argument reads as with a space") {
  CHECK(nginx_test("A07a-lua-block-brace-glued").exit_code == 0);
  auto cfg = load_case("A07a-lua-block-brace-glued");
  const auto* set = find(cfg.root, "set_by_lua_block");
  REQUIRE(set);
  CHECK(values(*set) == std::vector<std::string>{"$pass"});
  REQUIRE(set->lua_body());
  CHECK(*set->lua_body() == "\n            return \"ok\"\n        ");
  CHECK(values(*find(cfg.root, "location")) == std::vector<std::string>{"/"});
}

TEST_CASE("A07b: braces in Lua long strings, escaped quotes and comments do not close the block") {
  CHECK(nginx_test("A07b-lua-block-braces-in-lua-strings-comments").exit_code == 0);
  auto cfg = load_case("A07b-lua-block-braces-in-lua-strings-comments");
  const auto* loc = find(cfg.root, "location");
  REQUIRE(loc);
  REQUIRE(loc->block.size() == 1);
  REQUIRE(loc->block[0].lua_body());
  CHECK(loc->block[0].lua_body()->find("ngx.say(s, q)") != std::string::npos);
  CHECK(loc->block[0].lua_body()->find("'it\\'s }'") != std::string::npos);
}

TEST_CASE("A08: a multi-line single-quoted argument with , and \" is one argument") {
  CHECK(nginx_test("A08-semicolon-in-single-quotes").exit_code == 0);
  auto cfg = load_case("A08-semicolon-in-single-quotes");
  const auto* h = find(cfg.root, "add_header");
  REQUIRE(h);
  REQUIRE(h->args.size() == 2);
  CHECK(h->args[1].value() ==
        "\n                ngx.header.content_type = \"text/plain\";\n                "
        "ngx.say(ngx.var.x);\n            ");
  CHECK(find(cfg.root, "return")->line == 10);
}

TEST_CASE("A09: ${var} unquoted stays one token") {
  CHECK(nginx_test("A09-unquoted-dollar-brace-var").exit_code == 0);
  auto cfg = load_case("A09-unquoted-dollar-brace-var");
  CHECK(values(*find(cfg.root, "proxy_set_header")) ==
        std::vector<std::string>{"X-Origin-URI", "${scheme}://${http_host}/$request_uri"});
}

TEST_CASE("A10: comments between quoted pieces are not arguments") {
  CHECK(nginx_test("A10-comments-inside-multiline-args").exit_code == 0);
  auto cfg = load_case("A10-comments-inside-multiline-args");
  const auto* http = find(cfg.root, "http");
  REQUIRE(http->block.size() == 2);
  CHECK(values(http->block[0]) == std::vector<std::string>{"json_test", "escape=json", "{", "}"});
  CHECK(values(http->block[1]) ==
        std::vector<std::string>{"main", "$remote_addr [$time_local] \"$request\" ",
                                 "\"$http_user_agent\""});
}

TEST_CASE("A11: a comment between location and its { is ignored") {
  CHECK(nginx_test("A11-comment-between-location-and-brace").exit_code == 0);
  auto cfg = load_case("A11-comment-between-location-and-brace");
  const auto* loc = find(cfg.root, "location");
  CHECK(values(*loc) == std::vector<std::string>{"=", "/resume"});
  REQUIRE(loc->block.size() == 1);
  CHECK(values(loc->block[0]) == std::vector<std::string>{".*", "/files/resume.pdf", "redirect"});
}

TEST_CASE("A12: a quoted include path is followed") {
  CHECK(nginx_test("A12-include-path-double-quoted").exit_code == 0);
  auto cfg = load_case("A12-include-path-double-quoted");
  const auto* name = find(cfg.root, "server_name");
  REQUIRE(name);
  CHECK(values(*name) == std::vector<std::string>{"example.com"});
  CHECK(cfg.files[name->file].path == cases_copy().string() + "/A12-inc.d/site.conf");
  CHECK(cfg.chain_of(*name).size() == 1);
}

TEST_CASE(
    "A14: quotes in the middle of a token are literal; text after a closing quote is an error") {
  CHECK(nginx_test("A14-quote-mid-token-is-literal").exit_code == 0);
  auto cfg = load_case("A14-quote-mid-token-is-literal");
  CHECK(values(*find(cfg.root, "sub_filter")) ==
        std::vector<std::string>{"API_PREFIX\"/api\"", "API_PREFIX\"/nginx-api\""});
  const auto v = nginx_test("A14b-text-after-closing-quote");
  CHECK(v.emerg == "unexpected \"/\" in " + case_path("A14b-text-after-closing-quote") + ":5");
  CHECK(error_of("A14b-text-after-closing-quote") ==
        case_path("A14b-text-after-closing-quote") + ":5:32: unexpected \"/\"");
}

TEST_CASE("A15: a BOM becomes part of the first directive name, as in nginx") {
  const auto v = nginx_test("A15-utf8-bom");
  CHECK(v.emerg ==
        "unknown directive \"\xEF\xBB\xBF"
        "events\" in " +
            case_path("A15-utf8-bom") + ":1");
  auto cfg = load_case("A15-utf8-bom");
  REQUIRE(cfg.root.size() == 2);
  CHECK(cfg.root[0].name ==
        "\xEF\xBB\xBF"
        "events");
  CHECK(cfg.root[0].line == 1);
}

TEST_CASE("A17: non-UTF-8 bytes in a comment are fine") {
  CHECK(nginx_test("A17-non-utf8-bytes-in-comment").exit_code == 0);
  auto cfg = load_case("A17-non-utf8-bytes-in-comment");
  CHECK(values(*find(cfg.root, "server_name")) == std::vector<std::string>{"example.com"});
}

TEST_CASE("A18: PCRE-only regexes are kept as written") {
  CHECK(nginx_test("A18-pcre-only-regex-syntax").exit_code == 0);
  auto cfg = load_case("A18-pcre-only-regex-syntax");
  const auto* server = find(cfg.root, "server");
  REQUIRE(server->block.size() == 3);
  CHECK(values(server->block[1]) == std::vector<std::string>{"~*", "\\?.*\\=restapi.*+"});
  CHECK(values(server->block[2]) ==
        std::vector<std::string>{"~", "^/public/[0-9a-fA-F.]{32}/forPhp/(?<path>(?U).*)$"});
}

TEST_CASE("A21: a file that includes itself is an include-cycle error (nginx itself segfaults)") {
  const std::string e = error_of("A21-include-self-cycle");
  CHECK(e.find("A21-inc.d/loop.conf:1:1: include cycle: ") != std::string::npos);
  CHECK(e.find(case_path("A21-include-self-cycle") + ":3:5 -> ") != std::string::npos);
}

TEST_CASE("A22: a snippet included in two servers is expanded in both") {
  auto cfg = load_case("A22-shared-tls-snippet-included-twice");
  const auto* http = find(cfg.root, "http");
  REQUIRE(http->block.size() == 2);
  for (const auto& server : http->block) {
    const auto* protocols = find(server.block, "ssl_protocols");
    REQUIRE(protocols);
    CHECK(values(*protocols) == std::vector<std::string>{"TLSv1.3"});
    CHECK(find(server.block, "ssl_certificate") != nullptr);
  }
  CHECK(cfg.files.size() == 2);
}
