// What the user reads for rule fixtures whose text matters beyond the finding's place: the
// session source a cross-server-resumption finding names, the certbot request a
// certificate-name-mismatch fix prints, and the lines an early-data-replay fix
// gives per handler.

#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "engine/engine.hpp"
#include "model/model.hpp"
#include "support/fixture_env.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;

namespace {

// The findings of `rule` on fixtures/rules/<rule>/<file> (copied with its key material),
// assuming upstream nginx 1.22.1 and OpenSSL 3.0.19 as the fixture driver does.
std::vector<engine::finding> lint_fixture(const std::string& rule, const std::string& file) {
  static test::temp_dir tmp;
  const fs::path dir = tmp.path() / rule;
  if (!fs::exists(dir)) {
    fs::copy(test::source_dir() / "fixtures/rules" / rule, dir, fs::copy_options::recursive);
    test::make_fixture_material(dir);
    test::make_certificate_material(dir);
  }
  model::assumed_versions v;
  v.nginx = *model::version::parse("1.22.1");
  v.nginx_source = "fixture";
  v.openssl = *model::version::parse("3.0.19");
  auto cfg = std::make_unique<config::config>(config::load_file((dir / file).string()));
  auto m = model::build(*cfg, v);
  engine::lint_options opts;
  opts.select = std::set<std::string>{rule};
  return engine::run(m, opts);
}

}  // namespace

TEST_CASE("cross-server-resumption names a session source that completes handshakes") {
  auto findings = lint_fixture("cross-server-resumption", "reject-default-named-source.conf");
  REQUIRE(findings.size() == 1);
  const auto& msg = findings[0].message;
  CHECK(msg.find("session from www.example.test resumes in admin.example.test") !=
        std::string::npos);
  // `_` rejects every handshake: it never hands out a session.
  CHECK(msg.find("from _") == std::string::npos);
  CHECK(lint_fixture("cross-server-resumption", "ok-reject-default-only-source.conf").empty());
}

TEST_CASE("certificate-name-mismatch never puts a pattern in a certbot request") {
  auto findings = lint_fixture("certificate-name-mismatch", "suffix-wildcard-uncovered.conf");
  REQUIRE(findings.size() == 2);
  for (const auto& f : findings) {
    INFO(f.message << "\n" << f.fix);
    CHECK(f.fix.find("certbot") == std::string::npos);
    CHECK(f.fix.find("is a pattern: list the host names it should serve") != std::string::npos);
  }
  CHECK(findings[0].message.find("server_name mail.* is not covered") != std::string::npos);
  CHECK(findings[1].message.find("server_name ~^www\\.example\\.org$ is not covered") !=
        std::string::npos);
}

TEST_CASE("certificate-name-mismatch's certbot request keeps the certificate's names") {
  auto findings = lint_fixture("certificate-name-mismatch", "extra-name.conf");
  REQUIRE(findings.size() == 1);
  // --expand replaces the certificate: its names come first, then the missing one; the
  // wildcard quoted for the shell.
  CHECK(findings[0].fix ==
        "# reissue with every name, e.g.:\n"
        "certbot certonly --expand -d example.test -d '*.example.test' -d other.test");
}

TEST_CASE("early-data-replay fixes name the line for each handler and where it goes") {
  const std::pair<const char*, std::string> cases[] = {
      // /app/upload/ has a proxy_set_header list of its own (line 17) and @legacy takes its
      // uwsgi_param list on line 22: a line in the server block would reach neither.
      {"nested-locations.conf",
       "proxy_set_header Early-Data $ssl_early_data;  # beside the proxy_set_header lines at "
       "line 17, taken by location /app/upload/\n"
       "uwsgi_param HTTP_EARLY_DATA $ssl_early_data;  # beside the uwsgi_param lines at line 22, "
       "taken by location @legacy\n"},
      {"php-fastcgi-unhandled.conf",
       "fastcgi_param HTTP_EARLY_DATA $ssl_early_data;  # beside the fastcgi_param lines at line "
       "17, taken by location ~ \\.php$\n"},
      // Two locations that include one file take one list: one line, in that file.
      {"shared-fastcgi-params.conf",
       "fastcgi_param HTTP_EARLY_DATA $ssl_early_data;  # beside the fastcgi_param lines at "
       "fastcgi_params:1, taken by location ~ \\.php$, location = /wp-cron.php\n"},
      // No level has a proxy_set_header list: one line in the server block reaches location /.
      {"no-header.conf",
       "proxy_set_header Early-Data $ssl_early_data;  # in the server block, for location /\n"},
  };
  for (const auto& [file, lines] : cases) {
    INFO(file);
    const auto findings = lint_fixture("early-data-replay", file);
    REQUIRE(findings.size() == 1);
    // Files other than the fixture are named by path: the copy's folder is left out here.
    const std::string fix =
        std::regex_replace(findings[0].fix, std::regex("/[^ ]*/early-data-replay/"), "");
    CHECK(fix == lines + "# or turn 0-RTT off: ssl_early_data off;");
  }
}
