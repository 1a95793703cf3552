// The verdict rules of `check`, on probe results built by hand.

#include <doctest/doctest.h>

#include "check/check.hpp"

using namespace ngxtls;

namespace {

engine::finding make(const std::string& rule, engine::severity s, const std::string& server = "a.example") {
  engine::finding f;
  f.rule = rule;
  f.level = s;
  f.server = server;
  return f;
}

probe::target_result target(const std::string& sni, int resumed13, int tickets13, int stapled = 0) {
  probe::target_result t;
  t.target = "127.0.0.1:1";
  t.sni = sni;
  probe::run_result r;
  r.protocol = "TLSv1.3";
  r.mechanism = "ticket";
  r.attempts = 10;
  r.resumed = resumed13;
  r.tickets = tickets13;
  r.ticket_key_names = {{"00112233445566778899aabbccddeeff", tickets13}};
  t.protocols.push_back(r);
  t.ocsp.checked = true;
  t.ocsp.connections = 5;
  t.ocsp.stapled = stapled;
  return t;
}

}  // namespace

TEST_CASE("tls13-resumption-disabled: confirmed at 0% with tickets, refuted when it resumes") {
  auto f = make("tls13-resumption-disabled", engine::severity::error);
  CHECK(check::judge({f}, {target("a.example", 0, 20)})[0].result == check::verdict::confirmed);
  CHECK(check::judge({f}, {target("a.example", 10, 20)})[0].result == check::verdict::refuted);
  // No ticket at all: resumption could not be tried.
  CHECK(check::judge({f}, {target("a.example", 0, 0)})[0].result == check::verdict::not_testable);
}

TEST_CASE("results are matched to a finding by SNI") {
  auto f = make("tls13-resumption-disabled", engine::severity::error, "b.example");
  auto v = check::judge({f}, {target("a.example", 10, 20), target("b.example", 0, 20)});
  CHECK(v[0].result == check::verdict::confirmed);
  REQUIRE(v[0].evidence.size() == 2);
  CHECK(v[0].evidence[0].value == "0/10");
}

TEST_CASE("ocsp-stapling-dead: refuted by one staple, confirmed by none") {
  auto f = make("ocsp-stapling-dead", engine::severity::warning);
  CHECK(check::judge({f}, {target("a.example", 10, 20, 0)})[0].result == check::verdict::confirmed);
  CHECK(check::judge({f}, {target("a.example", 10, 20, 2)})[0].result == check::verdict::refuted);
}

TEST_CASE("ticket-keys-not-shared: partial rate confirms; several endpoints at 100% with one key refute") {
  auto f = make("ticket-keys-not-shared", engine::severity::warning);
  CHECK(check::judge({f}, {target("a.example", 5, 20)})[0].result == check::verdict::confirmed);
  CHECK(check::judge({f}, {target("a.example", 10, 20)})[0].result == check::verdict::not_testable);
  check::judge_options o;
  o.several_endpoints = true;
  CHECK(check::judge({f}, {target("a.example", 10, 20), target("a.example", 10, 20)}, o)[0].result ==
        check::verdict::refuted);
}

TEST_CASE("findings no probe can measure stay, marked not testable") {
  auto v = check::judge({make("utf8-bom", engine::severity::error)}, {target("a.example", 10, 20)});
  REQUIRE(v.size() == 1);
  CHECK(v[0].result == check::verdict::not_testable);
  CHECK(check::to_string(v[0].result) == "not_testable");
}
