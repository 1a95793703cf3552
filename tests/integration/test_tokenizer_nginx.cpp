// Tokenizer edge cases checked against nginx itself: for each snippet, `nginx -t` and our
// parser must agree (nginx's syntax error, same message and line; or both accept).

#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "config/loader.hpp"
#include "support/nginx_run.hpp"
#include "support/process.hpp"

namespace {

struct verdict {
  bool syntax_error = false;
  std::string message;
  unsigned line = 0;
};

/// nginx's verdict: a syntax error (tokenizer or block structure) with message and line,
/// or none (accepted, or stopped for a reason that is not syntax, like an unknown directive).
verdict nginx_verdict(const ngxtls::test::temp_dir& dir, const std::string& text) {
  const auto conf = dir.write("t.conf", text);
  auto r =
      ngxtls::test::run_nginx({"nginx", "-t", "-q", "-p", dir.path().string() + "/", "-c",
                               conf.string(), "-g", "pid " + dir.path().string() + "/nginx.pid;"});
  static const std::regex emerg(R"(\[emerg\] \d+#\d+: (.*) in (.*):(\d+)\n)");
  static const std::regex syntax(
      R"(^(unexpected .*|too long parameter.*|directive ".*" has no opening "\{"|directive ".*" is not terminated by ";"|Lua code block .*)$)");
  std::smatch m;
  verdict v;
  if (std::regex_search(r.err, m, emerg)) {
    const std::string message = m[1];
    if (std::regex_match(message, syntax)) {
      v.syntax_error = true;
      v.message = message;
      v.line = static_cast<unsigned>(std::stoul(m[3]));
    }
  }
  return v;
}

verdict our_verdict(const std::string& text) {
  verdict v;
  try {
    ngxtls::config::parse_buffer(text, "t.conf", 0);
  } catch (const ngxtls::input_error& e) {
    v.syntax_error = true;
    v.message = e.message();
    v.line = e.where().line;
  }
  return v;
}

const std::string lua_modules =
    "load_module /usr/lib/nginx/modules/ndk_http_module.so;\n"
    "load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;\n";

}  // namespace

TEST_CASE("tokenizer edge cases agree with nginx -t") {
  const std::vector<std::string> snippets = {
      "events {}\n",
      "events {}\n}\n",
      "events {}\n;\n",
      "events {}\n{}\n",
      "events {\n",
      "events {}\nx\n",
      "events {}\nx \"a\n",
      "events {}\nx \"a\"b;\n",
      "events {}\nx \"a\"\"b\";\n",
      "events {}\nx 'a'#;\n",
      "events {}\nx \"a\"}\n",
      "events {}\nx a\"b\" c'd';\n",
      "events {}\nx a\\;b \\{ \\\"q;\n",
      "events {}\nx ${a}b${c ;\n",
      "events {}\nx \"a\\\"b\" 'c\\'d';\n",
      "events {}\nx a}b;\n",
      "events {}\nx a#b;\n",
      "events {}\nx a # comment ; still comment\n;\n",
      "events {}\nx (\"a\") ;\n",
      "events {}\nx \"a\"(b);\n",
      "events {}\nx a\\\n",
      "events {}\nhttp { server \"a\"; }\n",
      "events {}\nhttp { server { location /; } }\n",
      "events {}\nhttp { map $a $b { default 0; x { } } }\n",
      "events {}\nhttp { types { text/html html; a { } } }\n",
      "events {}\nhttp { upstream u { server 127.0.0.1; } }\n",
      "events {}\nhttp { server { if ($a) { return 403; } } }\n",
      "events {}\nhttp { include mime.types {} }\n",
      "events\n# c {\n{}\n",
      "\xEF\xBB\xBF"
      "events {}\n",
      "events {}\nx " + std::string(4095, 'a') + ";\n",
      "events {}\nx " + std::string(4096, 'a') + ";\n",
      "events {}\nx " + std::string(4095, 'a') + " ;\n",
      "events {}\nx \"" + std::string(4093, 'a') + "\" ;\n",
      "events {}\nx \"" + std::string(4094, 'a') + "\" ;\n",
      "events {}\nx \"" + std::string(4096, 'a') + "\" ;\n",
      "events {}\n#" + std::string(4095, 'a') + "\n",
      "events {}\n#" + std::string(4094, 'a') + "\n",
      lua_modules +
          "events {}\nhttp { server { location / { content_by_lua_block { a = { '}' } } } } }\n",
      lua_modules +
          "events {}\nhttp { server { location / { content_by_lua_block {\n x = [==[ }\n ]] ]==] "
          "-- }\n --[[ } ]] } } } }\n",
      lua_modules +
          "events {}\nhttp { server { location / { content_by_lua_block {\n x = [[ }\n } } } }\n",
      lua_modules +
          "events {}\nhttp { server { location / { content_by_lua_block {\n x = {\n } } } \n",
      lua_modules + "events {}\nhttp { server { location / { content_by_lua_block; } } }\n",
      lua_modules + "events {}\nhttp { server { set_by_lua_block $a{ return \"}\" } } }\n",
  };
  ngxtls::test::temp_dir dir;
  int agree = 0;
  for (const auto& s : snippets) {
    CAPTURE(s.substr(0, 160));
    const verdict n = nginx_verdict(dir, s);
    const verdict o = our_verdict(s);
    CHECK(n.syntax_error == o.syntax_error);
    CHECK(n.message == o.message);
    CHECK(n.line == o.line);
    if (n.syntax_error == o.syntax_error && n.message == o.message && n.line == o.line) ++agree;
  }
  MESSAGE("tokenizer snippets agreeing with nginx: " << agree << "/" << snippets.size());
}
