// The lint engine on harden's own snippets: for every profile x tickets mode x nginx x OpenSSL,
// no resumption findings (tls13-resumption-disabled, ticket-keys-not-shared) beyond the one the
// snippet itself warns about (host mode before nginx 1.23.2), and nothing the target nginx
// would reject (unknown, misplaced, obsolete directives, wrong argument counts).
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "engine/engine.hpp"
#include "harden/harden.hpp"
#include "model/model.hpp"
#include "report/harden_output.hpp"
#include "tls/ciphers.hpp"

using namespace ngxtls;
using harden::tickets_mode;

namespace {

std::vector<engine::finding> lint_snippet(const harden::snippet& s) {
  const std::string text = "events {}\n" + report::harden_text(s);
  const std::string path = "/etc/nginx/nginx.conf";
  auto src = config::make_memory_source({{path, text}});
  auto cfg = config::load(path, *src);
  model::assumed_versions v;
  v.nginx = s.nginx;
  v.nginx_source = "test";
  v.openssl = s.openssl;
  v.openssl_source = "test";
  auto m = model::build(cfg, v);
  engine::lint_options o;
  return engine::run(m, o);
}

}  // namespace

TEST_CASE(
    "lint of every harden snippet has no resumption warnings and nothing the target rejects") {
  const auto linked =
      model::version::parse(tls::openssl_version()).value_or(model::version{3, 0, 0});
  for (const std::string profile : {"modern", "intermediate"})
    for (auto mode : {tickets_mode::fleet, tickets_mode::host})
      for (const std::string nv : {"1.18.0", "1.22.1", "1.25.1", "1.27.3", "1.29.2"})
        for (const std::string ov : {"3.0.0", "3.5.0"}) {
          CAPTURE(profile);
          CAPTURE(harden::to_string(mode));
          CAPTURE(nv);
          CAPTURE(ov);
          harden::harden_options o;
          o.profile = profile;
          o.nginx = *model::version::parse(nv);
          o.openssl = *model::version::parse(ov);
          o.tickets = mode;
          if (mode == tickets_mode::fleet) o.ticket_key_dir = "/etc/nginx/tickets";
          o.ocsp = harden::ocsp_mode::off;
          auto s = harden::generate(o);
          auto findings = lint_snippet(s);
          const bool old_nginx = o.nginx < model::version{1, 23, 2};
          for (const auto& f : findings) {
            CAPTURE(f.rule);
            CAPTURE(f.message);
            if (f.rule == "tls13-resumption-disabled")
              FAIL_CHECK("resumption finding on a harden snippet");
            if (f.rule == "ticket-keys-not-shared") {
              // Host mode keeps nginx's own keys: a note (one host; before 1.23.2 each reload
              // loses them, which the snippet states itself). Fleet mode: never.
              CHECK(mode == tickets_mode::host);
              CHECK(f.level == engine::severity::note);
              CHECK((f.message.find("reload or restart throws away") != std::string::npos) ==
                    old_nginx);
              continue;
            }
            // The linked libssl decides which groups exist; a 3.5 target on an older libssl
            // names X25519MLKEM768, which this machine cannot check.
            if (f.rule == "ecdh-curve-unknown" && o.openssl > linked) continue;
            if (f.level == engine::severity::note)
              continue;  // files not on this machine, single key
            FAIL_CHECK("finding on a harden snippet");
          }
        }
}

TEST_CASE("lint of harden --upstream snippets gives no upstream finding on any version") {
  for (const std::string profile : {"modern", "intermediate"})
    for (const std::string nv : {"1.18.0", "1.22.1", "1.26.3", "1.29.2", "1.30.6"})
      for (const bool ca : {false, true}) {
        CAPTURE(profile);
        CAPTURE(nv);
        CAPTURE(ca);
        harden::harden_options o;
        o.profile = profile;
        o.nginx = *model::version::parse(nv);
        o.tickets = tickets_mode::host;
        o.ocsp = harden::ocsp_mode::off;
        // A backend by address (proxy_ssl_name given), one by host name, one on loopback.
        o.upstreams =
            harden::parse_upstreams({"api=10.0.0.5:8443", "api=10.0.0.6:8443",
                                     "auth=auth.internal.example:443", "local=127.0.0.1:8443"},
                                    {"api=api.internal.example"});
        if (ca) o.upstream_trusted_certificate = "/etc/nginx/backend-ca.pem";
        auto s = harden::generate(o);
        REQUIRE(s.upstreams.size() == 3);
        for (const auto& f : lint_snippet(s)) {
          CAPTURE(f.rule);
          CAPTURE(f.message);
          CHECK(f.rule.rfind("upstream-", 0) != 0);
        }
      }
}

TEST_CASE("control: the same lint flags a snippet's location with TLS to the backend taken out") {
  harden::harden_options o;
  o.nginx = {1, 22, 1};
  o.ocsp = harden::ocsp_mode::off;
  o.upstreams = harden::parse_upstreams({"api=api.internal.example:443"}, {});
  auto s = harden::generate(o);
  REQUIRE(s.upstreams.size() == 1);
  auto& lines = s.upstreams.front().location_lines;
  // Only the proxy_pass stays: nginx's defaults everywhere else.
  lines.erase(lines.begin() + 1, lines.end());
  std::set<std::string> rules;
  for (const auto& f : lint_snippet(s)) rules.insert(f.rule);
  CHECK(rules.count("upstream-tls-per-request") == 1);
  CHECK(rules.count("upstream-not-verified") == 1);
  CHECK(rules.count("upstream-sni-missing") == 1);
}
