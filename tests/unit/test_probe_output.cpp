// The probe reports rendered by the measurement modules through the registry: on results built
// by hand that reach every verdict, text line, JSON field and metric family, the text, the
// Prometheus exposition and the verdicts equal fixtures/probe-output/, written by the prober
// before it was split into modules; the JSON equals it but for the added `timings` objects. They
// are golden files (tests/support/golden.hpp): NGXTLS_UPDATE_GOLDENS=1 rewrites them.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "probe/results.hpp"
#include "report/probe_output.hpp"
#include "support/golden.hpp"
#include "support/process.hpp"

using namespace ngxtls;

namespace {

probe::run_result run(bool tls13, bool ticket, int attempts, int resumed) {
  probe::run_result r;
  r.protocol = tls13 ? probe::tls_protocol::tls1_3 : probe::tls_protocol::tls1_2;
  r.mechanism =
      ticket ? probe::resumption_mechanism::ticket : probe::resumption_mechanism::session_id;
  r.mode = probe::offer_mode::same_session;
  r.attempts = attempts;
  r.resumed = resumed;
  r.rate = attempts ? double(resumed) / attempts : 0;
  r.connections = attempts + 1;
  r.negotiated_protocol = tls13 ? "TLSv1.3" : "TLSv1.2";
  r.cipher = "TLS_AES_256_GCM_SHA384";
  r.group = "X25519";
  r.alpn = "http/1.1";
  r.tickets = 2 * attempts;
  r.stateless_tickets = 2 * attempts;
  r.ticket_min_bytes = 200;
  r.ticket_max_bytes = 250;
  r.ticket_key_names["00112233445566778899aabbccddeeff"] = attempts;
  r.tickets_per_connection = 1.5;
  r.lifetime_hint_s = 300;
  r.max_tickets_per_connection = 2;
  r.offered_key_name = "00112233445566778899aabbccddeeff";
  r.full_handshake_ms = probe::summarize_ms({1.5, 2.5, 3.5});
  r.resumed_handshake_ms = probe::summarize_ms({0.5, 0.7});
  r.outcomes = {true, false, true};
  r.http_statuses[200] = attempts;
  r.elapsed_ms = 12.5;
  return r;
}

std::vector<probe::target_result> results() {
  std::vector<probe::target_result> all;
  {
    probe::target_result t;
    t.target = "a.example:443";
    t.address = "127.0.0.1:443";
    t.sni = "a.example";
    t.elapsed_ms = 100;
    t.protocols.push_back(run(true, true, 10, 10));
    auto r2 = run(false, true, 10, 5);  // two key names, fresh tickets
    r2.ticket_key_names["ffeeddccbbaa99887766554433221100"] = 3;
    r2.opaque_tickets = 1;
    r2.mode = probe::offer_mode::fresh_tickets;
    t.protocols.push_back(r2);
    auto r3 = run(false, false, 10, 0);  // session IDs that never resume
    r3.session_id_issued = true;
    r3.tickets = 0;
    r3.ticket_key_names.clear();
    r3.failed_connections = 2;
    r3.last_attempt_error = "x\x1b[31m";
    t.protocols.push_back(r3);
    auto r4 = run(true, true, 5, 1);  // single use, saved session
    r4.single_use_pattern = true;
    r4.session_source = probe::session_origin::sess_in;
    t.protocols.push_back(r4);
    auto r5 = run(true, true, 5, 0);  // stateful tickets without a cache
    r5.session_source = probe::session_origin::sess_in;
    r5.ticket_key_names.clear();
    r5.stateful_tickets = 4;
    r5.stateless_tickets = 0;
    t.protocols.push_back(r5);
    auto r6 = run(false, true, 0, 0);  // no TLS 1.2 ticket
    r6.session_offered = false;
    t.protocols.push_back(r6);
    auto r7 = run(true, true, 0, 0);  // refused
    r7.supported = false;
    r7.error = "protocol version";
    r7.connections = 0;
    t.protocols.push_back(r7);
    auto r8 = run(true, true, 5, 0);  // opaque tickets
    r8.ticket_key_names.clear();
    r8.opaque_tickets = 10;
    t.protocols.push_back(r8);
    probe::certificate_facts c;
    c.subject = "CN=a";
    c.issuer = "CN=ca";
    c.key_type = "EC";
    c.key_bits = 256;
    c.not_after_unix = 1700000000;
    c.days_to_expiry = -3.5;
    c.ocsp_url_present = true;
    c.ocsp_urls = {"http://o"};
    c.dns_names = {"a.example"};
    c.sha256_hex = "ab";
    c.chain_length = 2;
    t.certificate = c;
    auto& o = t.ocsp;
    o.checked = true;
    o.connections = 5;
    o.stapled = 3;
    o.valid_staples = 2;
    o.status = probe::ocsp_status::invalid;
    o.staple_status = tls::staple_verdict::revoked;
    o.staple_reason = "revoked at";
    o.response_status = "successful";
    o.cert_status = "revoked";
    o.revocation_time_unix = 5;
    o.revocation_reason = "keyCompromise";
    o.next_update_in_s = 100;
    o.this_update_age_s = 10;
    o.waited_ms = 2500;
    all.push_back(t);
  }
  for (auto st : {probe::ocsp_status::working, probe::ocsp_status::absent,
                  probe::ocsp_status::not_applicable, probe::ocsp_status::skipped}) {
    probe::target_result t;
    t.target = "b\"x";
    t.address = "[::1]:8443";
    t.protocols.push_back(run(true, true, 3, 3));
    auto& o = t.ocsp;
    o.checked = true;
    o.connections = 4;
    o.stapled = st == probe::ocsp_status::working ? 4 : 0;
    o.valid_staples = o.stapled;
    o.status = st;
    if (o.stapled) {
      o.staple_status = tls::staple_verdict::valid;
      o.cert_status = "good";
    }
    all.push_back(t);
  }
  probe::target_result unresolved;
  unresolved.target = "c";
  unresolved.error = "cannot resolve";
  all.push_back(unresolved);
  probe::target_result late;
  late.target = "d";
  late.error = "deadline";
  late.protocols.push_back(run(false, false, 2, 2));
  probe::certificate_facts c;
  c.subject = "CN=d";
  c.days_to_expiry = 30;
  late.certificate = c;
  all.push_back(late);
  return all;
}

}  // namespace

TEST_CASE("the probe's text report is the one the prober wrote before its modules") {
  const auto diff =
      test::golden_mismatch("fixtures/probe-output/text.txt", report::probe_text(results(), false));
  CHECK_MESSAGE(diff.empty(), diff);
}

TEST_CASE("a run that timed no handshake prints no handshake time") {
  // The connections of the run failed after their handshakes (endless data, endless tickets):
  // no sample was kept, and a median of 0.00 ms would read as a measurement.
  probe::target_result t;
  t.target = "a.example:443";
  t.address = "127.0.0.1:443";
  t.sni = "a.example";
  auto r = run(true, true, 0, 0);
  r.full_handshake_ms = probe::summarize_ms({});
  r.resumed_handshake_ms = probe::summarize_ms({});
  t.protocols.push_back(r);
  const std::string text = report::probe_text({t}, false);
  CAPTURE(text);
  CHECK(text.find("handshake (connect + TLS): no full handshake timed\n") != std::string::npos);
  CHECK(text.find("0.00 ms") == std::string::npos);
}

TEST_CASE("the probe's Prometheus text keeps every family, sample and their order") {
  const auto diff = test::golden_mismatch("fixtures/probe-output/prometheus.txt",
                                          report::probe_prometheus(results()));
  CHECK_MESSAGE(diff.empty(), diff);
}

TEST_CASE("the probe's verdict lines keep their words and order") {
  std::string out;
  for (const auto& t : results())
    for (const auto& v : report::probe_verdicts(t)) out += v + "\n";
  const auto diff = test::golden_mismatch("fixtures/probe-output/verdicts.txt", out);
  CHECK_MESSAGE(diff.empty(), diff);
}

TEST_CASE("the probe's JSON record keeps every field, and the timings module adds its timings") {
  auto j = report::probe_json(results());
  for (auto& t : j.at("targets"))
    for (auto& p : t.at("protocols")) {
      REQUIRE(p.contains("timings"));
      CHECK(p.at("timings").at("full").at("connect_ms").at("count") == 0);
      p.erase("timings");
    }
  // The golden file is the record as nlohmann's dump(2) writes it (keys sorted).
  const auto diff = test::golden_mismatch("fixtures/probe-output/json.json", j.dump(2) + "\n");
  CHECK_MESSAGE(diff.empty(), diff);
}
