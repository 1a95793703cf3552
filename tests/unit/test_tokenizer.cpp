// nginx's tokenizer rules (docs/nginx-facts.md#parsing; ngx_conf_read_token), each with values
// worked out by hand.

#include <doctest/doctest.h>

#include <string>

#include "base/error.hpp"
#include "config/loader.hpp"

using ngxtls::config::directive;
using ngxtls::config::parse_buffer;
using ngxtls::config::quote_style;

namespace {

ngxtls::config::parsed_buffer parse(const std::string& text) {
  return parse_buffer(text, "t.conf", 0);
}

/// The input_error a text raises, as "line:col: message" (col omitted when 0).
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const ngxtls::input_error& e) {
    std::string out = std::to_string(e.where().line);
    if (e.where().column) out += ":" + std::to_string(e.where().column);
    return out + ": " + e.message();
  }
  return "no error";
}

std::vector<std::string> values(const directive& d) {
  std::vector<std::string> out;
  for (const auto& a : d.args) out.emplace_back(a.value());
  return out;
}

}  // namespace

TEST_CASE("an empty buffer and a buffer of comments and spaces hold no directives") {
  CHECK(parse("").empty());
  CHECK(parse(" \t\r\n# only a comment\n\n#x").empty());
}

TEST_CASE("a directive keeps its name, arguments, line and byte column") {
  auto ds = parse("user  www-data;\n  worker_processes 4;");
  REQUIRE(ds.size() == 2);
  CHECK(ds[0].name == "user");
  CHECK(ds[0].line == 1);
  CHECK(ds[0].column == 1);
  CHECK(values(ds[0]) == std::vector<std::string>{"www-data"});
  CHECK(ds.position(ds[0], ds[0].args[0]).column == 7);
  CHECK(ds[1].line == 2);
  CHECK(ds[1].column == 3);
  CHECK(ds[1].offset == 18);
  CHECK(ds.position(ds[1], ds[1].args[0]).line == 2);
  CHECK(ds.position(ds[1], ds[1].args[0]).column == 20);
  CHECK_FALSE(ds[0].has_block);
}

TEST_CASE("an argument on a later line than its directive's name has that line's column") {
  auto ds = parse("x;\n  add_header  A\n\t  \"b c\" # note\n  d;");
  REQUIRE(ds.size() == 2);
  const directive& d = ds[1];
  CHECK(d.line == 2);
  CHECK(d.column == 3);
  REQUIRE(d.args.size() == 3);
  CHECK(ds.position(d, d.args[0]).line == 2);
  CHECK(ds.position(d, d.args[0]).column == 15);
  CHECK(ds.position(d, d.args[1]).line == 3);
  CHECK(ds.position(d, d.args[1]).column == 4);
  CHECK(ds.position(d, d.args[2]).line == 4);
  CHECK(ds.position(d, d.args[2]).column == 3);
}

TEST_CASE("an unquoted token ends at space, tab, CR, LF, semicolon or opening brace") {
  auto ds = parse("a b\tc\rd\ne;f{g;}");
  REQUIRE(ds.size() == 2);
  CHECK(values(ds[0]) == std::vector<std::string>{"b", "c", "d", "e"});
  CHECK(ds[1].name == "f");
  CHECK(ds[1].has_block);
  REQUIRE(ds[1].block.size() == 1);
  CHECK(ds[1].block[0].name == "g");
}

TEST_CASE("a closing brace, quotes and # inside an unquoted token are ordinary bytes") {
  auto ds = parse("return 200 a}b\"c'd#e;");
  REQUIRE(ds.size() == 1);
  CHECK(values(ds[0]) == std::vector<std::string>{"200", "a}b\"c'd#e"});
  CHECK(ds[0].args[1].quote() == quote_style::none);
}

TEST_CASE("a brace glued to a token opens a block (A06)") {
  auto ds = parse("server{location /x{return 204;}}");
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].name == "server");
  REQUIRE(ds[0].block.size() == 1);
  CHECK(values(ds[0].block[0]) == std::vector<std::string>{"/x"});
  CHECK(ds[0].block[0].block[0].name == "return");
}

TEST_CASE("quoted tokens keep , { } # as text and record the quote style (A01, A04)") {
  auto ds = parse("add_header X-Test \"a;b{c}d\"; return 200 '}#';");
  REQUIRE(ds.size() == 2);
  CHECK(values(ds[0]) == std::vector<std::string>{"X-Test", "a;b{c}d"});
  CHECK(ds[0].args[1].quote() == quote_style::double_quote);
  CHECK(ds[0].args[1].raw() == "\"a;b{c}d\"");
  CHECK(values(ds[1]) == std::vector<std::string>{"200", "}#"});
  CHECK(ds[1].args[1].quote() == quote_style::single_quote);
}

TEST_CASE("a single-quoted token may span lines (A08)") {
  auto ds = parse("add_header X '\n  a;\n  \"b\";\n';\nreturn 204;");
  REQUIRE(ds.size() == 2);
  CHECK(ds[0].args[1].value() == "\n  a;\n  \"b\";\n");
  CHECK(ds[1].line == 5);
}

TEST_CASE("quotes open only at a token's start (A14)") {
  auto ds = parse("sub_filter API_PREFIX\"/api\" API_PREFIX\"/nginx-api\";");
  REQUIRE(ds.size() == 1);
  CHECK(values(ds[0]) ==
        std::vector<std::string>{"API_PREFIX\"/api\"", "API_PREFIX\"/nginx-api\""});
}

TEST_CASE("after a closing quote only space, , { or ) may follow (A14b)") {
  CHECK(error_of("sub_filter \"API_PREFIX\"/api \"x\";") == "1:24: unexpected \"/\"");
  CHECK(error_of("a \"b\"\"c\";") == "1:6: unexpected \"\"\"");
  CHECK(error_of("a \"b\"#c;") == "1:6: unexpected \"#\"");
  CHECK(error_of("a {b \"c\"}") == "1:9: unexpected \"}\"");
  auto ds = parse("a \"b\";c 'd'{}e \"f\"\t;");
  REQUIRE(ds.size() == 3);
  CHECK(ds[1].has_block);
}

TEST_CASE("a ) after a closing quote starts the next token") {
  auto ds = parse("if ($a = \"x\") { }");
  REQUIRE(ds.size() == 1);
  CHECK(values(ds[0]) == std::vector<std::string>{"($a", "=", "x", ")"});
}

TEST_CASE("nginx unescapes \\\" \\' \\\\ and \\t \\r \\n and keeps other pairs") {
  auto ds = parse(R"(a "q\"s\'b\\t\tr\rn\nx\y";)");
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].args[0].value() == "q\"s'b\\t\tr\rn\nx\\y");
  CHECK(ds[0].args[0].raw() == R"("q\"s\'b\\t\tr\rn\nx\y")");
}

TEST_CASE("outside quotes a backslash keeps the next byte from ending the token") {
  auto ds = parse("a b\\;c\\ d\\{e;");
  REQUIRE(ds.size() == 1);
  CHECK(values(ds[0]) == std::vector<std::string>{"b\\;c\\ d\\{e"});
  auto ds2 = parse("a \\\"b;");
  CHECK(values(ds2[0]) == std::vector<std::string>{"\"b"});
}

TEST_CASE("${ does not end a token and its } stays in the word (A09)") {
  auto ds = parse("proxy_set_header X ${scheme}://${http_host}/$request_uri;");
  REQUIRE(ds.size() == 1);
  CHECK(values(ds[0]) == std::vector<std::string>{"X", "${scheme}://${http_host}/$request_uri"});
  // `${url` ends at the space, like any token.
  auto ds2 = parse("server_name ${url ;");
  CHECK(values(ds2[0]) == std::vector<std::string>{"${url"});
  // `{` not right after `$` opens a block.
  // The rest is read as a directive named `2}$` with a block (A02, unquoted).
  auto ds3 = parse("location ~ ^/x{2}$ {} }");
  CHECK(values(ds3[0]) == std::vector<std::string>{"~", "^/x"});
  REQUIRE(ds3[0].block.size() == 1);
  CHECK(ds3[0].block[0].name == "2}$");
}

TEST_CASE("# starts a comment only where a token could start (A10, A11)") {
  auto ds = parse(
      "log_format x '{'\n  # '\"req\": \"$request\"' # odd \" quote\n'}';\n"
      "location = /r\n# { rewrite .* /old; }\n{ rewrite .* /new redirect; }");
  REQUIRE(ds.size() == 2);
  CHECK(values(ds[0]) == std::vector<std::string>{"x", "{", "}"});
  CHECK(values(ds[1]) == std::vector<std::string>{"=", "/r"});
  REQUIRE(ds[1].block.size() == 1);
  CHECK(values(ds[1].block[0]) == std::vector<std::string>{".*", "/new", "redirect"});
  CHECK(values(parse("a b#c;")[0]) == std::vector<std::string>{"b#c"});
}

TEST_CASE("a UTF-8 BOM stays part of the first directive's name (A15)") {
  auto ds = parse(
      "\xEF\xBB\xBF"
      "events {}");
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].name ==
        "\xEF\xBB\xBF"
        "events");
}

TEST_CASE("bytes that are not UTF-8 are fine (A17)") {
  auto ds = parse("# \xA4\xA4\xE5 f\xFCr\nserver_name caf\xE9;");
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].args[0].value() == "caf\xE9");
}

TEST_CASE("tokenizer errors carry nginx's message and line") {
  CHECK(error_of("}") == "1:1: unexpected \"}\"");
  CHECK(error_of(";") == "1:1: unexpected \";\"");
  CHECK(error_of("{}") == "1:1: unexpected \"{\"");
  CHECK(error_of("a b }") == "1:5: unexpected \"}\"");
  CHECK(error_of("a {\n b;\n") == "3:1: unexpected end of file, expecting \"}\"");
  CHECK(error_of("a b") == "1:4: unexpected end of file, expecting \";\" or \"}\"");
  CHECK(error_of("a b # c;") == "1:9: unexpected end of file, expecting \";\" or \"}\"");
  CHECK(error_of("a \"b;\n") == "2:1: unexpected end of file, expecting \";\" or \"}\"");
  CHECK(error_of("a b\\") == "1:5: unexpected end of file, expecting \";\" or \"}\"");
  CHECK(error_of("a {\n  b;\n}\n}") == "4:1: unexpected \"}\"");
  CHECK(error_of("a {\n  ;\n}") == "2:3: unexpected \";\"");
}

TEST_CASE("a block directive ended with , has no opening brace") {
  CHECK(error_of("http {\n server \"some\";\n}") ==
        "2:15: directive \"server\" has no opening \"{\"");
  CHECK(error_of("location /;") == "1:11: directive \"location\" has no opening \"{\"");
  CHECK(error_of("map $a $b;") == "1:10: directive \"map\" has no opening \"{\"");
  CHECK(error_of("content_by_lua_block;") ==
        "1:21: directive \"content_by_lua_block\" has no opening \"{\"");
  // Inside upstream, `server` is the simple upstream server directive.
  CHECK(parse("upstream b { server 127.0.0.1:8080; }")[0].block.size() == 1);
  CHECK(error_of("upstream b { server x { } }") ==
        "1:23: directive \"server\" is not terminated by \";\"");
  CHECK(error_of("include a {}") == "1:11: directive \"include\" is not terminated by \";\"");
}

TEST_CASE("key-value blocks reject a nested block and do not check their keys") {
  CHECK(error_of("map $a $b {\n default 0;\n i_am_lost {\n return 500;\n }\n}") ==
        "3:12: unexpected \"{\"");
  CHECK(error_of("types { text/html { } }") == "1:19: unexpected \"{\"");
  CHECK(error_of("geo $a { x_by_lua_block { } }") == "1:25: unexpected \"{\"");
  auto ds = parse("map $a $b { server 1; location 2; http 3; }");
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].block.size() == 3);
}

TEST_CASE("lua block bodies are read with Lua's lexical rules (A07a, A07b)") {
  auto ds = parse("set_by_lua_block $pass{ return \"ok\" }");
  REQUIRE(ds.size() == 1);
  CHECK(values(ds[0]) == std::vector<std::string>{"$pass"});
  REQUIRE(ds[0].lua_body());
  CHECK(*ds[0].lua_body() == " return \"ok\" ");
  CHECK_FALSE(ds[0].has_block);

  const std::string body =
      "\n  local s = [[ } ]]  -- a } in a long string\n  local q = 'it\\'s }'\n"
      "  -- stray } in a comment\n  local t = { [ \"}\" ] = [==[ ]] } ]==] }\n"
      "  --[[ } ]] --[=[ } ]=]\n  ngx.say(s, q)\n";
  auto ds2 = parse("location / { content_by_lua_block {" + body + "} return 204; }");
  REQUIRE(ds2.size() == 1);
  REQUIRE(ds2[0].block.size() == 2);
  CHECK(*ds2[0].block[0].lua_body() == body);
  CHECK(ds2[0].block[1].name == "return");
}

TEST_CASE("a quoted lua block name is a lua block too, a lua name as argument is not") {
  auto ds = parse("\"rewrite_by_lua_block\" { a = { 1 } }\nserver_name content_by_lua_block ;");
  REQUIRE(ds.size() == 2);
  CHECK(ds[0].name == "rewrite_by_lua_block");
  CHECK(*ds[0].lua_body() == " a = { 1 } ");
  CHECK(values(ds[1]) == std::vector<std::string>{"content_by_lua_block"});
}

TEST_CASE("lua strings do not span lines: their quote is then an ordinary byte") {
  // As lua-nginx-module: the `}` on line 2 closes the block, then `"` opens an nginx string.
  CHECK(error_of("content_by_lua_block {\nx = \"a\n}\"\n") ==
        "4:1: unexpected end of file, expecting \";\" or \"}\"");
  auto ds = parse("content_by_lua_block { x = \"abc }");
  CHECK(*ds[0].lua_body() == " x = \"abc ");
}

TEST_CASE("lua block errors use the module's messages") {
  CHECK(error_of("content_by_lua_block {\n x = [==[ } ]=]\n") ==
        "2:6: Lua code block missing the closing long bracket \"]==]\", the inlined Lua code may "
        "be too long");
  CHECK(error_of("content_by_lua_block {\n x = {\n") ==
        "2: unexpected end of file, expecting terminating characters for lua code block");
}

TEST_CASE("tokens and comments that do not fit nginx's 4096-byte buffer are too long") {
  // Measured on nginx 1.22.1: a 4096-byte token before `;` fails, 4095 passes; a quoted one
  // fails from 4094 bytes (nginx keeps its start through the closing quote and one space).
  const std::string a4095(4095, 'a'), a4096(4096, 'a'), a4094(4094, 'a');
  CHECK(error_of("x " + a4095 + ";") == "no error");
  CHECK(error_of("x " + a4096 + ";") == "1: too long parameter \"aaaaaaaaaa...\" started");
  CHECK(error_of("x \"" + std::string(4093, 'a') + "\" ;") == "no error");
  CHECK(error_of("x \"" + a4094 + "\" ;") == "1: too long parameter \"aaaaaaaaaa...\" started");
  CHECK(error_of("x \"" + a4096 + "\" ;") ==
        "1: too long parameter, probably missing terminating \"\"\" character");
  CHECK(error_of("#" + std::string(4094, 'a') + "\n") == "no error");
  CHECK(error_of("\n#" + a4095 + "\n") == "2: too long parameter \"#aaaaaaaaa...\" started");
}

TEST_CASE("nesting deeper than the limit is an error naming the limit, not a crash") {
  std::string deep;
  for (int i = 0; i < 1000000; ++i) deep += "a{";
  const std::string e = error_of(deep);
  CHECK(e.find("blocks nested deeper than the limit of 256 (max_depth)") != std::string::npos);
  std::string lua = "content_by_lua_block {";
  for (int i = 0; i < 100000; ++i) lua += "{";
  CHECK(error_of(lua).find("(max_depth)") != std::string::npos);
  std::string ok;
  for (int i = 0; i < 200; ++i) ok += "a{";
  for (int i = 0; i < 200; ++i) ok += "}";
  CHECK(error_of(ok) == "no error");
}
