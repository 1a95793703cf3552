// check's workflow as a library (check/workflow.hpp): the request's checks, the names probed,
// the target a load speaks for, and a whole run against a real sandbox nginx.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/error.hpp"
#include "check/load_findings.hpp"
#include "check/workflow.hpp"
#include "config/loader.hpp"
#include "model/model.hpp"

using namespace ngxtls;

namespace {

model::model model_of(const std::string& text, config::config& cfg) {
  auto disk = config::make_disk_source();
  cfg = config::load_buffer(std::string_view(text), "/etc/nginx/nginx.conf", *disk);
  return model::build(cfg, {});
}

probe::target_result answered(const std::string& sni, int port) {
  probe::target_result r;
  r.target = "127.0.0.1:" + std::to_string(port);
  r.address = r.target;
  r.sni = sni;
  return r;
}

}  // namespace

TEST_CASE("check requests that cannot run are refused before anything is read") {
  check::check_request r;
  CHECK_THROWS_AS(check::validate(r), usage_error);  // neither --endpoint nor --sandbox
  r.sandbox = true;
  CHECK_NOTHROW(check::validate(r));
  r.endpoints = {"example.com"};
  CHECK_THROWS_AS(check::validate(r), usage_error);
  r.endpoints.clear();
  r.reload = true;
  r.probe.sess_in = "/tmp/s.pem";
  CHECK_THROWS_AS(check::validate(r), usage_error);
  r = {};
  r.endpoints = {"example.com"};
  r.load = true;
  CHECK_THROWS_AS(check::validate(r), usage_error);
  r.load = false;
  r.load_duration_s = 0;
  CHECK_THROWS_AS(check::validate(r), usage_error);
}

TEST_CASE("a missing sandbox nginx is reported in one set of words") {
  try {
    (void)check::sandbox_nginx("/nonexistent/nginx");
    FAIL("no error");
  } catch (const usage_error& e) {
    CHECK(std::string(e.what()) ==
          "check --sandbox: --nginx /nonexistent/nginx is not an executable file");
  }
}

TEST_CASE("--endpoint probes the literal names nginx matches, not $hostname or patterns") {
  config::config cfg;
  const auto m = model_of(
      "events {}\nhttp {\n server { listen 443 ssl; server_name a.example $hostname "
      "*.wild.example .dom.example www.tail.* ~^re\\.example$ _ a.example; }\n"
      " server { listen 80; server_name plain.example; }\n}\n",
      cfg);
  CHECK(check::probe_names(m, 16) == std::vector<std::string>{"a.example"});
}

TEST_CASE("check --load speaks for a wildcard server with the target its name selects") {
  engine::finding f;
  f.rule = "tls13-resumption-disabled";
  f.server = "*.example.com";
  f.ports = {443};
  // The sandbox probes *.example.com as ngxtls-probe.example.com (config::name_selecting).
  const std::vector<probe::target_result> probes = {answered("other.example.org", 40001),
                                                    answered("ngxtls-probe.example.com", 40001)};
  CHECK(check::target_for(f, probes, {{40001, 443}}) == 1);
  f.server = "ngxtls-probe.example.com";
  CHECK(check::target_for(f, probes, {{40001, 443}}) == 1);
  f.ports = {8443};  // no probe of its socket
  CHECK(check::target_for(f, probes, {{40001, 443}}) == probes.size());
}
