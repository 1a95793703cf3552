// Each rule declares the probe question that confirms it, and `check` has a judge for every
// question a rule or its doc page promises.

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "check/check.hpp"
#include "engine/engine.hpp"
#include "support/process.hpp"

using namespace ngxtls;

namespace {

// The "How the prober confirms it" section of a rule's hand-written doc.
std::string prober_section(const std::string& doc) {
  const auto start = doc.find("## How the prober confirms it");
  if (start == std::string::npos) return {};
  const auto end = doc.find("\n## ", start + 1);
  return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The question docs/rules/ID.md states (the generated "Probe question: **Q**.").
std::string stated_question(const std::string& page) {
  const std::string marker = "Probe question: **";
  const auto at = page.find(marker);
  if (at == std::string::npos) return {};
  const auto from = at + marker.size();
  return page.substr(from, page.find("**", from) - from);
}

// A probe result of a.example that resumed and stapled, enough for any judge to look at.
probe::target_result a_target() {
  probe::target_result t;
  t.target = "127.0.0.1:1";
  t.address = "127.0.0.1:1";
  t.sni = "a.example";
  probe::run_result r;
  r.protocol = probe::tls_protocol::tls1_3;
  r.mechanism = probe::resumption_mechanism::ticket;
  r.attempts = 10;
  r.resumed = 10;
  r.tickets = 20;
  r.supported = true;
  t.protocols.push_back(r);
  return t;
}

}  // namespace

TEST_CASE("every rule's probe question has a judge, and its doc page states that question") {
  for (const auto& r : engine::all_rules()) {
    CAPTURE(r.id);
    const engine::probe_question q = r.confirmed_by;
    // A question other than none is a promise that check answers it.
    if (q != engine::probe_question::none) CHECK(check::answers(q));
    // The hand-written section naming `check` promises a check verdict: the rule must declare
    // the question that gives it.
    const std::string prose = prober_section(r.doc);
    if (prose.find("`check`") != std::string::npos ||
        prose.find("ngxtls check") != std::string::npos)
      CHECK(q != engine::probe_question::none);
    // The page users read (docs/rules, generated) states the declared question.
    const std::string page =
        test::read_file(test::source_dir() / "docs" / "rules" / (r.id + ".md"));
    CHECK(stated_question(page) == engine::to_string(q));
  }
  CHECK_FALSE(check::answers(engine::probe_question::none));
}

TEST_CASE("judge() picks the judge by the question: a declared question never meets 'no probe'") {
  for (const auto& r : engine::all_rules()) {
    CAPTURE(r.id);
    engine::finding f;
    f.rule = r.id;
    f.level = engine::severity::warning;
    f.server = "a.example";
    const auto c = check::judge({f}, {a_target()})[0];
    if (r.confirmed_by == engine::probe_question::none)
      CHECK(c.reason == "no probe measures this rule");
    else
      CHECK(c.reason != "no probe measures this rule");
  }
}

TEST_CASE("a finding's own question overrides its rule's") {
  engine::finding f;
  f.rule = "ticket-key-rotation";
  f.server = "a.example";
  CHECK(check::question_of(f) == engine::probe_question::none);
  f.question = engine::probe_question::tls13_resumes;
  CHECK(check::question_of(f) == engine::probe_question::tls13_resumes);
  // The TLS 1.3 judge, not the rotation rule's: a.example resumed, so it is refuted.
  CHECK(check::judge({f}, {a_target()})[0].result == check::verdict::refuted);
  // A catalog of the caller's own: its declaration decides.
  engine::rule mine;
  mine.id = "ticket-key-rotation";
  mine.confirmed_by = engine::probe_question::tls13_handshake;
  const engine::rule_catalog catalog{mine};
  f.question.reset();
  CHECK(check::question_of(f, &catalog) == engine::probe_question::tls13_handshake);
}

TEST_CASE("every rule confirmed by a resumption question declares that it costs resumption") {
  // The questions whose answer is whether, or how often, sessions resume.
  const std::set<engine::probe_question> resumption = {
      engine::probe_question::tls13_resumes,         engine::probe_question::tls12_resumes,
      engine::probe_question::key_domains,           engine::probe_question::saved_session_resumes,
      engine::probe_question::session_id_resumption, engine::probe_question::session_crosses_names};
  std::set<std::string> declared;
  for (const auto& r : engine::all_rules()) {
    CAPTURE(r.id);
    if (resumption.count(r.confirmed_by)) CHECK(r.costs_resumption);
    if (r.costs_resumption) declared.insert(r.id);
  }
  // And the rules whose findings `check --load` prices: the four above, and the two about
  // ticket key files and cache size that no probe question answers.
  CHECK(declared == std::set<std::string>{"cross-server-resumption", "session-cache-per-worker",
                                          "session-cache-too-small", "ticket-key-rotation",
                                          "ticket-keys-not-shared", "tls12-resumption-disabled",
                                          "tls13-resumption-disabled"});
}
