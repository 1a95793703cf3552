// The verdict rules of `check`, on probe results built by hand.

#include <doctest/doctest.h>

#include "check/check.hpp"
#include "config/loader.hpp"
#include "model/model.hpp"

using namespace ngxtls;

namespace {

engine::finding make(const std::string& rule, engine::severity s,
                     const std::string& server = "a.example") {
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
  r.protocol = probe::tls_protocol::tls1_3;
  r.mechanism = probe::resumption_mechanism::ticket;
  r.attempts = 10;
  r.resumed = resumed13;
  r.tickets = tickets13;
  r.ticket_key_names = {{"00112233445566778899aabbccddeeff", tickets13}};
  t.protocols.push_back(r);
  t.ocsp.checked = true;
  t.ocsp.connections = 5;
  t.ocsp.stapled = stapled;
  t.ocsp.valid_staples = stapled;  // valid unless a test says otherwise
  t.ocsp.status = stapled > 0 ? probe::ocsp_status::working : probe::ocsp_status::absent;
  if (stapled > 0) t.ocsp.staple_status = tls::staple_verdict::valid;
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

namespace {

// A target whose staples are all revoked, as the prober reports it.
probe::target_result revoked_staples(const std::string& sni) {
  auto t = target(sni, 10, 20, 3);
  t.ocsp.valid_staples = 0;
  t.ocsp.status = probe::ocsp_status::invalid;
  t.ocsp.staple_status = tls::staple_verdict::revoked;
  t.ocsp.staple_reason =
      "the certificate is revoked since 2025-01-01 00:00:00 UTC (reason keyCompromise)";
  t.ocsp.response_status = "successful";
  t.ocsp.cert_status = "revoked";
  t.ocsp.revocation_reason = "keyCompromise";
  return t;
}

}  // namespace

TEST_CASE("ocsp-stapling-dead: a staple that is not valid neither confirms nor refutes it") {
  auto f = make("ocsp-stapling-dead", engine::severity::warning);
  auto c = check::judge({f}, {revoked_staples("a.example")})[0];
  CHECK(c.result == check::verdict::not_testable);
  CHECK(
      c.reason ==
      "a staple arrives on 3/5 connections but 3 are not valid (revoked): see ocsp-staple-invalid");
  bool named = false;
  for (const auto& e : c.evidence)
    named =
        named || (e.name == "OCSP staple" && e.value ==
                                                 "revoked: the certificate is revoked since "
                                                 "2025-01-01 00:00:00 UTC (reason keyCompromise)");
  CHECK(named);
}

namespace {

struct linted {
  std::unique_ptr<config::config> cfg;
  std::unique_ptr<model::model> m;
  engine::lint_options opts;
  explicit linted(const std::string& text) {
    const std::string path = "/etc/nginx/nginx.conf";
    auto src = config::make_memory_source({{path, text}});
    cfg = std::make_unique<config::config>(config::load(path, *src));
    model::assumed_versions v;
    v.nginx = *model::version::parse("1.22.1");
    v.openssl = *model::version::parse("3.0.19");
    m = std::make_unique<model::model>(model::build(*cfg, v));
  }
};

const char* two_servers = R"(events {}
http {
  server {
    listen 443 ssl;
    server_name a.example;
    ssl_certificate /nonexistent/a.pem;
    ssl_certificate_key /nonexistent/a.key;
  }
  server {
    listen 443 ssl;
    server_name b.example;
    ssl_certificate /nonexistent/b.pem;
    ssl_certificate_key /nonexistent/b.key;
    ssl_stapling on;
    ssl_stapling_file /etc/nginx/b.der;
  }
}
)";

}  // namespace

TEST_CASE(
    "ocsp-staple-invalid: a confirmed error at the stapling file of the server that answered") {
  linted l(two_servers);
  engine::context ctx(*l.m, l.opts);
  auto bad = revoked_staples("b.example");
  bad.address = "127.0.0.1:443";
  auto good = target("a.example", 10, 20, 3);
  good.address = "127.0.0.1:443";
  auto v = check::probe_findings(ctx, {good, bad});
  REQUIRE(v.size() == 1);
  const auto& c = v[0];
  CHECK(c.result == check::verdict::confirmed);
  CHECK(c.finding.rule == "ocsp-staple-invalid");
  CHECK(c.finding.level == engine::severity::error);
  CHECK(c.finding.location.file == "/etc/nginx/nginx.conf");
  CHECK(c.finding.location.line == 15);  // ssl_stapling_file of b.example
  CHECK(c.finding.server == "b.example");
  CHECK(c.finding.message ==
        "the OCSP staple served for 127.0.0.1:1 (SNI b.example) is not valid (revoked): the "
        "certificate is revoked "
        "since 2025-01-01 00:00:00 UTC (reason keyCompromise); clients must reject it");
  CHECK(c.reason ==
        "the probe got 3/3 staples that are not valid: the certificate is revoked since 2025-01-01 "
        "00:00:00 UTC "
        "(reason keyCompromise)");
  // A name no server has reaches the default server: its ssl_certificate, having no stapling.
  auto other = revoked_staples("c.example");
  other.address = "127.0.0.1:443";
  v = check::probe_findings(ctx, {other});
  REQUIRE(v.size() == 1);
  CHECK(v[0].finding.location.line == 6);
  CHECK(v[0].finding.server == "a.example");
  // The sandbox maps its port back; a port the config does not have points at the first line.
  other.address = "127.0.0.1:8443";
  CHECK(check::probe_findings(ctx, {other}, {{8443, 443}})[0].finding.location.line == 6);
  CHECK(check::probe_findings(ctx, {other})[0].finding.location.line == 1);
  // In the sandbox, unreadable certificates ran as stand-ins: their staple file is another's.
  CHECK(check::probe_findings(ctx, {bad}, {}, true).empty());
}

TEST_CASE("ocsp-staple-invalid: deselected rules and severity overrides apply") {
  linted l(two_servers);
  auto bad = revoked_staples("b.example");
  bad.address = "127.0.0.1:443";
  l.opts.ignore = {"ocsp-staple-invalid"};
  CHECK(check::probe_findings(engine::context(*l.m, l.opts), {bad}).empty());
  l.opts.ignore.clear();
  l.opts.select = std::set<std::string>{"ocsp-stapling-dead"};
  CHECK(check::probe_findings(engine::context(*l.m, l.opts), {bad}).empty());
  l.opts.select.reset();
  l.opts.severity_overrides["ocsp-staple-invalid"] = engine::severity::warning;
  auto v = check::probe_findings(engine::context(*l.m, l.opts), {bad});
  REQUIRE(v.size() == 1);
  CHECK(v[0].finding.level == engine::severity::warning);
  // Working, absent or unprobed targets give nothing.
  auto fine = target("b.example", 10, 20, 3);
  fine.address = "127.0.0.1:443";
  auto none = target("b.example", 10, 20, 0);
  none.address = "127.0.0.1:443";
  auto failed = bad;
  failed.error = "connection refused";
  CHECK(check::probe_findings(engine::context(*l.m, l.opts), {fine, none, failed}).empty());
}

TEST_CASE(
    "ticket-keys-not-shared: partial rate confirms, several endpoints at 100% with one key "
    "refute") {
  auto f = make("ticket-keys-not-shared", engine::severity::warning);
  CHECK(check::judge({f}, {target("a.example", 5, 20)})[0].result == check::verdict::confirmed);
  CHECK(check::judge({f}, {target("a.example", 10, 20)})[0].result == check::verdict::not_testable);
  check::judge_options o;
  o.several_endpoints = true;
  CHECK(
      check::judge({f}, {target("a.example", 10, 20), target("a.example", 10, 20)}, o)[0].result ==
      check::verdict::refuted);
}

TEST_CASE("findings no probe can measure stay, marked not testable") {
  auto v = check::judge({make("utf8-bom", engine::severity::error)}, {target("a.example", 10, 20)});
  REQUIRE(v.size() == 1);
  CHECK(v[0].result == check::verdict::not_testable);
  CHECK(check::to_string(v[0].result) == "not_testable");
}

TEST_CASE("sandbox: probed ports map to the config's ports before matching a finding's sockets") {
  auto f = make("tls13-resumption-disabled", engine::severity::error);
  f.ports = {443};
  auto t = target("a.example", 0, 20);
  t.address = "127.0.0.1:40001";
  // Without the map the probe of port 40001 says nothing about a finding on 443.
  CHECK(check::judge({f}, {t})[0].result == check::verdict::not_testable);
  check::judge_options o;
  o.port_map = {{40001, 443}};
  CHECK(check::judge({f}, {t}, o)[0].result == check::verdict::confirmed);
  o.port_map = {{40001, 8443}};
  CHECK(check::judge({f}, {t}, o)[0].result == check::verdict::not_testable);
}

TEST_CASE("sandbox: an error at a directive nginx -t rejected is confirmed, notes there are not") {
  auto err = make("ticket-key-rotation", engine::severity::error);
  err.location = {"/etc/nginx/site.conf", 5, 9};
  auto note = make("ticket-key-rotation", engine::severity::note);
  note.location = err.location;
  check::judge_options o;
  o.rejected = {{{"/etc/nginx/site.conf", 5, 9}, "\"/k\" must be 48 or 80 bytes"}};
  auto v = check::judge({err, note}, {}, o);
  CHECK(v[0].result == check::verdict::confirmed);
  CHECK(v[0].reason.find("must be 48 or 80 bytes") != std::string::npos);
  CHECK(v[1].result == check::verdict::not_testable);
}

TEST_CASE(
    "sandbox: findings of a server the sandbox did not start are not testable, with the reason") {
  auto f = make("tls13-resumption-disabled", engine::severity::error, "b.example");
  check::judge_options o;
  o.untested = {{"b.example", "nginx -t rejects it"}};
  auto v = check::judge({f}, {target("b.example", 0, 20)}, o);
  CHECK(v[0].result == check::verdict::not_testable);
  CHECK(v[0].reason.find("nginx -t rejects it") != std::string::npos);
}

TEST_CASE(
    "sandbox --reload: a saved session that no longer resumes confirms ticket-keys-not-shared") {
  auto f = make("ticket-keys-not-shared", engine::severity::warning);
  auto t = target("a.example", 0, 20);
  t.protocols[0].session_source = probe::session_origin::sess_in;
  check::judge_options o;
  o.reload = true;
  CHECK(check::judge({f}, {t}, o)[0].result == check::verdict::confirmed);
  // It still resumes after the reload: the reload hazard is refuted, the instance hazard untested.
  t.protocols[0].resumed = 10;
  CHECK(check::judge({f}, {t}, o)[0].result == check::verdict::not_testable);
}

TEST_CASE("key names: automatic keys, configured files and strangers are told apart by socket") {
  check::configured_key k;
  k.path = "/etc/nginx/k1.key";
  k.key_name_hex = "00112233445566778899aabbccddeeff";
  k.encrypting = true;
  k.ports = {443};
  auto on443 = target("a.example", 10, 20);
  on443.address = "127.0.0.1:443";
  auto lines = check::match_key_names({k}, {on443});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("sealed with /etc/nginx/k1.key (the encrypting key)") != std::string::npos);
  // The same name seen on a socket whose default server names no key file.
  auto on8443 = target("a.example", 10, 20);
  on8443.address = "127.0.0.1:8443";
  on8443.protocols[0].ticket_key_names = {{"ffeeddccbbaa99887766554433221100", 20}};
  lines = check::match_key_names({k}, {on8443});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("nginx's automatic key") != std::string::npos);
  // A stranger on the keyed socket: the deployed config is not the linted one.
  on443.protocols[0].ticket_key_names = {{"ffeeddccbbaa99887766554433221100", 20}};
  lines = check::match_key_names({k}, {on443});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("the deployed config is not the one you linted") != std::string::npos);
  // The sandbox maps its port back to the config's.
  on8443.protocols[0].ticket_key_names = {{k.key_name_hex, 20}};
  lines = check::match_key_names({k}, {on8443}, {{8443, 443}});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("sealed with /etc/nginx/k1.key") != std::string::npos);
}

TEST_CASE(
    "session-cache-per-worker: partial session-ID resumption confirms, all or nothing is not "
    "testable") {
  auto f = make("session-cache-per-worker", engine::severity::warning);
  auto with_ids = [](int resumed) {
    auto t = target("a.example", 10, 20);
    probe::run_result r;
    r.protocol = probe::tls_protocol::tls1_2;
    r.mechanism = probe::resumption_mechanism::session_id;
    r.attempts = 80;
    r.resumed = resumed;
    t.protocols.push_back(r);
    return t;
  };
  CHECK(check::judge({f}, {with_ids(19)})[0].result == check::verdict::confirmed);
  CHECK(check::judge({f}, {with_ids(80)})[0].result == check::verdict::not_testable);
  CHECK(check::judge({f}, {with_ids(0)})[0].result == check::verdict::not_testable);
  CHECK(check::judge({f}, {target("a.example", 10, 20)})[0].result == check::verdict::not_testable);
}

namespace {
probe::target_result handshakes(const std::string& sni, bool tls13, bool tls12) {
  probe::target_result t;
  t.target = "127.0.0.1:1";
  t.sni = sni;
  for (auto [proto, ok] : {std::pair{probe::tls_protocol::tls1_3, tls13},
                           std::pair{probe::tls_protocol::tls1_2, tls12}}) {
    probe::run_result r;
    r.protocol = proto;
    r.mechanism = probe::resumption_mechanism::ticket;
    r.supported = ok;
    if (!ok) r.error = "tlsv1 alert protocol version";
    t.protocols.push_back(r);
  }
  return t;
}
}  // namespace

TEST_CASE("tls13-missing: a refused TLS 1.3 handshake confirms, a completed one refutes") {
  auto f = make("tls13-missing", engine::severity::warning);
  CHECK(check::judge({f}, {handshakes("a.example", false, true)})[0].result ==
        check::verdict::confirmed);
  CHECK(check::judge({f}, {handshakes("a.example", true, true)})[0].result ==
        check::verdict::refuted);
}

TEST_CASE("protocols-ignored-per-sni: the protocols accepted under the name against its own list") {
  auto f = make("protocols-ignored-per-sni", engine::severity::warning, "b.example");
  f.facts.push_back({"ssl_protocols", "TLSv1.3", "server", std::nullopt});
  // The default server's TLSv1.2 is accepted under b.example, whose own list has TLSv1.3 only.
  auto v = check::judge({f}, {handshakes("b.example", true, true)});
  CHECK(v[0].result == check::verdict::confirmed);
  CHECK(v[0].reason.find("TLSv1.2 accepted") != std::string::npos);
  CHECK(check::judge({f}, {handshakes("b.example", true, false)})[0].result ==
        check::verdict::refuted);
}

TEST_CASE(
    "ocsp-staple-invalid: an inline suppression silences it, and lint never calls that suppression "
    "unused") {
  std::string text = two_servers;
  const std::string at = "    ssl_stapling_file";
  text.insert(text.find(at),
              "    # ngxtls: ignore ocsp-staple-invalid -- the file is refreshed by cron\n");
  linted l(text);
  auto bad = revoked_staples("b.example");
  bad.address = "127.0.0.1:443";
  CHECK(check::probe_findings(engine::context(*l.m, l.opts), {bad}).empty());
  // Lint runs every rule, the probe-only one included: its suppression is not stale.
  for (const auto& f : engine::run(*l.m, l.opts)) {
    INFO(f.message);
    CHECK(f.rule != "unused-suppression");
  }
  // A suppression of a lint rule that finds nothing there still is.
  std::string stale = two_servers;
  stale.insert(stale.find(at), "    # ngxtls: ignore weak-key\n");
  linted l2(stale);
  int unused = 0;
  for (const auto& f : engine::run(*l2.m, l2.opts)) unused += f.rule == "unused-suppression";
  CHECK(unused == 1);
}

namespace {

/// A target at SNI `sni` whose TLS 1.3 tickets carry `key_name` and `lifetime_s`.
probe::target_result tickets_at(const std::string& sni, const std::string& key_name,
                                std::uint32_t lifetime_s) {
  auto t = target(sni, 10, 20);
  t.protocols[0].ticket_key_names = {{key_name, 20}};
  t.protocols[0].lifetime_hint_s = lifetime_s;
  return t;
}

engine::finding setting_finding(const std::string& name, const std::string& own,
                                const std::string& dflt) {
  auto f = make("session-setting-ignored", engine::severity::warning, "b.example");
  f.facts.push_back({name, own, "server", std::nullopt});
  f.facts.push_back({"default server " + name, dflt, "default", std::nullopt});
  return f;
}

const std::string k_a = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                  k_b = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

}  // namespace

TEST_CASE("session-setting-ignored: the key names and lifetime under the server's name decide") {
  auto key = setting_finding("ssl_session_ticket_key", "/etc/nginx/b.key", "");
  // b's tickets carry a's key name: b's key file seals nothing.
  CHECK(
      check::judge({key}, {tickets_at("a.example", k_a, 300), tickets_at("b.example", k_a, 300)})[0]
          .result == check::verdict::confirmed);
  // b's own key name: its key file applies.
  CHECK(
      check::judge({key}, {tickets_at("a.example", k_a, 300), tickets_at("b.example", k_b, 300)})[0]
          .result == check::verdict::refuted);
  // Only b probed: nothing to compare with.
  CHECK(check::judge({key}, {tickets_at("b.example", k_a, 300)})[0].result ==
        check::verdict::not_testable);

  auto timeout = setting_finding("ssl_session_timeout", "60s", "5m");
  auto v = check::judge({timeout},
                        {tickets_at("a.example", k_a, 300), tickets_at("b.example", k_a, 300)});
  CHECK(v[0].result == check::verdict::confirmed);
  CHECK(v[0].reason ==
        "tickets under this name carry a 300 s lifetime, not its own 60 s: the default server's");
  CHECK(check::judge({timeout}, {tickets_at("b.example", k_a, 60)})[0].result ==
        check::verdict::refuted);
  // "1h30m" is 5400 s.
  CHECK(check::judge({setting_finding("ssl_session_timeout", "1h30m", "5m")},
                     {tickets_at("b.example", k_a, 5400)})[0]
            .result == check::verdict::refuted);

  // A cache only in b, none in the default server: session IDs under b's name show it.
  auto cache = setting_finding("ssl_session_cache", "shared:B:1m", "none");
  auto ids = [](int resumed) {
    auto t = tickets_at("b.example", k_a, 300);
    probe::run_result r;
    r.protocol = probe::tls_protocol::tls1_2;
    r.mechanism = probe::resumption_mechanism::session_id;
    r.attempts = 10;
    r.resumed = resumed;
    t.protocols.push_back(r);
    return t;
  };
  CHECK(check::judge({cache}, {ids(0)})[0].result == check::verdict::confirmed);
  CHECK(check::judge({cache}, {ids(10)})[0].result == check::verdict::refuted);
  // Both have caches: the ID run cannot tell whose.
  CHECK(check::judge({setting_finding("ssl_session_cache", "shared:B:1m", "shared:A:1m")},
                     {ids(0)})[0]
            .result == check::verdict::not_testable);
}

TEST_CASE(
    "cross-server-resumption: resumed or refused across names confirms, a full handshake refutes") {
  auto f = make("cross-server-resumption", engine::severity::warning, "b.example");
  f.ports = {443};
  auto crossing = [](const std::string& proto, int attempts, int resumed, int failed) {
    check::session_crossing x;
    x.from_sni = "a.example";
    x.to_sni = "b.example";
    x.port = 443;
    x.protocol = proto;
    x.taken = true;
    x.attempts = attempts;
    x.resumed = resumed;
    x.failed = failed;
    if (failed) x.failure = "TLS handshake failed: tlsv1 alert access denied";
    return x;
  };
  const std::vector<probe::target_result> rs = {target("b.example", 10, 20)};
  check::judge_options o;
  o.crossings = {crossing("TLSv1.3", 0, 0, 4), crossing("TLSv1.2", 4, 4, 0)};
  auto v = check::judge({f}, rs, o);
  CHECK(v[0].result == check::verdict::confirmed);
  REQUIRE(v[0].evidence.size() == 2);
  CHECK(v[0].evidence[0].name == "TLSv1.3 session from a.example offered at b.example");
  CHECK(v[0].evidence[0].value ==
        "handshake failed 4/4 (TLS handshake failed: tlsv1 alert access denied)");
  CHECK(v[0].evidence[1].value == "resumed 4/4");
  o.crossings = {crossing("TLSv1.3", 4, 0, 0), crossing("TLSv1.2", 4, 0, 0)};
  v = check::judge({f}, rs, o);
  CHECK(v[0].result == check::verdict::refuted);
  CHECK(v[0].evidence[0].value == "full handshake 4/4");
  // Offered on another socket, or nothing offered: not testable.
  o.crossings = {crossing("TLSv1.3", 0, 0, 4)};
  o.crossings[0].port = 8443;
  CHECK(check::judge({f}, rs, o)[0].result == check::verdict::not_testable);
  o.crossings.clear();
  CHECK(check::judge({f}, rs, o)[0].result == check::verdict::not_testable);
}

TEST_CASE(
    "nginx -t warnings confirm obsolete-directive at their line and listen-protocols-differ on "
    "their port") {
  auto obsolete = make("obsolete-directive", engine::severity::warning, "");
  obsolete.location = {"/etc/nginx/nginx.conf", 12, 5};
  auto differ = make("listen-protocols-differ", engine::severity::note, "a.example");
  differ.message =
      "a.example listens on *:443 without http2, but b.example sets it on the same socket";
  differ.ports = {443};
  differ.location = {"/etc/nginx/nginx.conf", 5, 5};
  const std::vector<probe::target_result> rs = {target("a.example", 10, 20)};
  check::judge_options o;
  // Made one by one: GCC 12 takes a braced list of these for uninitialized (-Wmaybe-uninitialized).
  auto warning = [](std::uint32_t line, int port, std::string message) {
    check::nginx_warning w;
    w.where = source_location{"/etc/nginx/nginx.conf", line, 5};
    w.port = port;
    w.message = std::move(message);
    return w;
  };
  o.warnings.push_back(warning(
      12, 443,
      "the \"listen ... http2\" directive is deprecated, use the \"http2\" directive instead"));
  auto v = check::judge({obsolete, differ}, rs, o);
  CHECK(v[0].result == check::verdict::confirmed);
  CHECK(v[0].evidence[0].value ==
        "[warn] the \"listen ... http2\" directive is deprecated, use the \"http2\" directive "
        "instead");
  // No "protocol options redefined", and http2 is not visible to a probe.
  CHECK(v[1].result == check::verdict::not_testable);
  o.warnings.push_back(warning(13, 443, "protocol options redefined for *:443"));
  CHECK(check::judge({differ}, rs, o)[0].result == check::verdict::confirmed);
  // On another port it says nothing about this socket.
  o.warnings.back().port = 8443;
  CHECK(check::judge({differ}, rs, o)[0].result == check::verdict::not_testable);
  // A warning at another line does not confirm the obsolete directive.
  o.warnings.clear();
  o.warnings.push_back(warning(13, 443, "the \"ssl\" directive is deprecated"));
  CHECK(check::judge({obsolete}, rs, o)[0].result == check::verdict::not_testable);
}

TEST_CASE(
    "listen-protocols-differ: a TLS handshake under the plain server's name confirms, unless the "
    "sandbox added ssl") {
  auto f = make("listen-protocols-differ", engine::severity::warning, "a.example");
  f.message = "a.example listens on *:443 without ssl, but b.example sets it on the same socket";
  f.ports = {443};
  auto t = target("a.example", 10, 20);
  t.address = "127.0.0.1:443";
  t.protocols[0].connections = 11;
  t.protocols[0].negotiated_protocol = "TLSv1.3";
  CHECK(check::judge({f}, {t})[0].result == check::verdict::confirmed);
  check::judge_options o;
  o.ssl_added_ports = {443};
  CHECK(check::judge({f}, {t}, o)[0].result == check::verdict::not_testable);
}
