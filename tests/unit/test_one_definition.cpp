// Facts with one definition that several layers use: the conf-prefix path resolution
// (config/paths.hpp), the max_directives error text and the model's built-in defaults. Each case
// pins the one definition against values worked out by hand, or against every place that uses it.

#include <doctest/doctest.h>

#include <string>

#include "config/loader.hpp"
#include "config/paths.hpp"
#include "model/model.hpp"
#include "rules/directive_check.hpp"
#include "support/process.hpp"

using namespace ngxtls;

TEST_CASE("full_name joins a relative name to the conf prefix as ngx_conf_full_name does") {
  CHECK(config::full_name("/etc/nginx", "certs/a.pem") == "/etc/nginx/certs/a.pem");
  CHECK(config::full_name("/etc/nginx/", "certs/a.pem") == "/etc/nginx/certs/a.pem");
  CHECK(config::full_name("/etc/nginx", "/srv/a.pem") == "/srv/a.pem");
  CHECK(config::full_name("", "a.pem") == "a.pem");
  CHECK(config::full_name(".", "a.pem") == "a.pem");
  // An include glob keeps its dot-dot: nginx's glob walks it.
  CHECK(config::full_name("/etc/nginx", "sites/*/../x.conf") == "/etc/nginx/sites/*/../x.conf");
}

TEST_CASE("resolve_file gives one path for every spelling of one file") {
  CHECK(config::resolve_file("/etc/nginx", "a.pem") == "/etc/nginx/a.pem");
  CHECK(config::resolve_file("/etc/nginx", "./a.pem") == "/etc/nginx/a.pem");
  CHECK(config::resolve_file("/etc/nginx", "/etc/nginx/./a.pem") == "/etc/nginx/a.pem");
  CHECK(config::resolve_file("/etc/nginx", "/etc/nginx/x/../a.pem") == "/etc/nginx/a.pem");
  CHECK(config::resolve_file("/etc/nginx/", "certs//a.pem") == "/etc/nginx/certs/a.pem");
  CHECK(config::resolve_file(".", "./certs/a.pem") == "certs/a.pem");
  CHECK(config::resolve_file("", "") == "");
}

TEST_CASE("a missing certificate named relative and absolute is reported once") {
  // Two servers name one missing file, one relative to the conf prefix and one absolute with
  // a "./" in it: the file is one, so is the finding.
  test::temp_dir tmp;
  const std::string dir = tmp.path().string();
  const auto conf = tmp.write("nginx.conf",
                              "events {}\nhttp {\n"
                              "  server { listen 443 ssl; server_name a.example;\n"
                              "    ssl_certificate missing.pem; ssl_certificate_key k.pem; }\n"
                              "  server { listen 443 ssl; server_name b.example;\n"
                              "    ssl_certificate " +
                                  dir + "/./missing.pem; ssl_certificate_key k.pem; }\n}\n");
  const auto r = test::run({test::ngxtls_binary(), "lint", "--select", "file-not-inspected",
                            "--fail-on", "never", conf.string()});
  REQUIRE(r.exit_code == 0);
  // One summary note for the run; it counts the distinct files (missing.pem and k.pem) and
  // names missing.pem once, normalized.
  CHECK_MESSAGE(r.out.find("2 certificate/key files not on this machine") != std::string::npos,
                r.out);
  std::size_t count = 0;
  const std::string named = "ssl_certificate = " + dir + "/missing.pem";
  for (auto p = r.out.find(named); p != std::string::npos; p = r.out.find(named, p + 1)) ++count;
  CHECK_MESSAGE(count == 1, r.out);
}

TEST_CASE("the parser and the include expansion word the max_directives error alike") {
  test::temp_dir tmp;
  tmp.write("inc.conf", "a;\na;\na;\n");
  const auto one_file = tmp.write("one.conf", "a;\na;\na;\na;\n");
  const auto included = tmp.write("main.conf", "include inc.conf;\ninclude inc.conf;\n");
  config::load_options o;
  o.max_directives = 3;
  const std::string text = "more than 3 directives after expanding includes (max_directives)";
  for (const auto& p : {one_file, included}) {
    INFO(p.string());
    try {
      (void)config::load_file(p.string(), o);
      FAIL("no error");
    } catch (const input_error& e) {
      CHECK(e.message() == text);
    }
  }
}

TEST_CASE("every directive with a built-in default is a default setting of a bare server") {
  // nginx_default() is the model's one table: a server that sets nothing inherits exactly the
  // directives it knows, with its values, for each version whose ssl_protocols default differs.
  for (const char* ver : {"1.22.1", "1.25.0", "1.27.3"}) {
    INFO("nginx " << ver);
    test::temp_dir tmp;
    const auto conf =
        tmp.write("nginx.conf", "events {}\nhttp {\n  server { listen 443 ssl; }\n}\n");
    const auto cfg = config::load_file(conf.string());
    model::assumed_versions v;
    v.nginx = *model::version::parse(ver);
    const auto m = model::build(cfg, v);
    REQUIRE(m.servers.size() == 1);
    const auto& s = m.servers[0];
    std::size_t defaulted = 0;
    for (const auto& e : rules::directives::table()) {
      const auto want = model::nginx_default(e.name, v.nginx);
      const auto* got = s.get(e.name);
      INFO(e.name);
      CHECK(want.has_value() == (got != nullptr));
      if (!want || !got) continue;
      ++defaulted;
      CHECK(got->from == model::origin::nginx_default);
      REQUIRE(got->values.size() == 1);
      CHECK(got->values[0].args.strings() == *want);
    }
    CHECK(defaulted == 14);
  }
}
