// `ngxtls check --sandbox --nginx BIN` on each nginx of the version matrix
// (scripts/nginx-versions.sh): the verdicts agree with what
// tests/integration/test_nginx_versions.cpp measures there
// (docs/nginx-facts.md#default-server-rules), and check finds what `lint --nginx-version V` finds
// for that version. Each case runs once per version and prints `NGXTLS_SKIP:` when that version is
// not installed here.
#include <doctest/doctest.h>

#include <fstream>
#include <iostream>
#include <set>
#include <tuple>

#include "probe_util.hpp"
#include "support/nginx_version_cases.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

tls::pki_options names(std::vector<std::string> dns) {
  tls::pki_options o;
  o.dns_names = std::move(dns);
  return o;
}

/// A config with servers a.test (default_server) and b.test on port 8443, written to a temp dir.
struct fixture {
  temp_dir dir;
  tls::pki_paths a = tls::make_pki((dir.path() / "a").string(), names({"a.test"}));
  tls::pki_paths b = tls::make_pki((dir.path() / "b").string(), names({"b.test"}));
  tls::pki_paths both = tls::make_pki((dir.path() / "ab").string(), names({"a.test", "b.test"}));
  std::string conf = (dir.path() / "nginx.conf").string();

  /// Writes the config: listen flags and extra directives of each server; `one_cert`: both
  /// servers use one certificate for both names.
  void write(const std::string& a_listen, const std::string& a_extra, const std::string& b_listen,
             const std::string& b_extra, bool one_cert = false) {
    const auto& ca = one_cert ? both : a;
    const auto& cb = one_cert ? both : b;
    std::ofstream out(conf);
    out << "events {}\nhttp {\n  ssl_protocols TLSv1.2 TLSv1.3;\n"
        << "  server {\n    listen 8443" << a_listen << ";\n    server_name a.test;\n"
        << "    ssl_certificate " << ca.chain << ";\n    ssl_certificate_key " << ca.leaf_key
        << ";\n    " << a_extra << "\n  }\n"
        << "  server {\n    listen 8443" << b_listen << ";\n    server_name b.test;\n"
        << "    ssl_certificate " << cb.chain << ";\n    ssl_certificate_key " << cb.leaf_key
        << ";\n    " << b_extra << "\n  }\n}\n";
  }
};

/// (rule, line) -> verdict of `check --sandbox --nginx BIN`, the version detected from BIN.
std::map<std::pair<std::string, int>, std::string> check_verdicts(const nginx_version_entry& v,
                                                                  const std::string& conf,
                                                                  const std::string& rules,
                                                                  nlohmann::json* doc = nullptr) {
  int rc = -1;
  std::string err;
  auto j = ngxtls_json({"check", conf, "--sandbox", "--nginx", v.binary, "-n", "4", "--no-ocsp",
                        "--select", rules, "--fail-on", "never"},
                       &rc, &err);
  INFO("check stderr: ", err);
  CHECK(rc == 0);
  CHECK(j.at("assumed").at("nginx") == v.version);
  CHECK(j.at("assumed").at("nginx_source") == "nginx -V");
  std::map<std::pair<std::string, int>, std::string> out;
  for (const auto& f : j.at("findings")) {
    // Several findings of a rule on one line: their verdicts joined with "+", in order.
    auto& slot = out[{f.at("rule").get<std::string>(), f.at("location").at("line").get<int>()}];
    slot += (slot.empty() ? "" : "+") + f.at("verdict").get<std::string>();
    std::cout << "  nginx " << v.version << " check: " << f.at("rule").get<std::string>()
              << " line " << f.at("location").at("line") << ": "
              << f.at("verdict").get<std::string>() << " ("
              << f.at("verdict_reason").get<std::string>() << ")" << std::endl;
  }
  if (doc) *doc = j;
  return out;
}

/// (rule, line) of `lint --nginx-version V`.
std::set<std::pair<std::string, int>> lint_findings(const nginx_version_entry& v,
                                                    const std::string& conf,
                                                    const std::string& rules) {
  auto j = ngxtls_json(
      {"lint", conf, "--nginx-version", v.version, "--select", rules, "--fail-on", "never"});
  std::set<std::pair<std::string, int>> out;
  for (const auto& f : j.at("findings"))
    out.insert({f.at("rule").get<std::string>(), f.at("location").at("line").get<int>()});
  return out;
}

/// The findings of check equal those of lint for the version, and have these verdicts.
void expect(const nginx_version_entry& v, const std::string& conf, const std::string& rules,
            const std::map<std::pair<std::string, int>, std::string>& want) {
  auto got = check_verdicts(v, conf, rules);
  std::set<std::pair<std::string, int>> keys;
  for (const auto& [k, verdict] : got) keys.insert(k);
  CHECK(keys == lint_findings(v, conf, rules));
  CHECK(got == want);
}

// Line numbers of fixture::write: a's listen 5, a_extra 9; b's listen 12, b_extra 16.

void cross_server(const nginx_version_entry& v, bool one_cert) {
  fixture fx;
  fx.write(" ssl default_server", "", " ssl",
           "ssl_verify_client on; ssl_client_certificate " + fx.a.root_cert + ";", one_cert);
  // Up to 1.26.3 (with the CVE-2025-23419 fix) a TLS 1.3 session from a fails at b with
  // access_denied: confirmed. From 1.29.2 nothing crosses: lint reports nothing.
  std::map<std::pair<std::string, int>, std::string> want;
  if (v.slot != "1.30") want[{"cross-server-resumption", 16}] = "confirmed";
  expect(v, fx.conf, "cross-server-resumption", want);
  if (v.slot != "1.30") {
    nlohmann::json doc;
    check_verdicts(v, fx.conf, "cross-server-resumption", &doc);
    std::string ev;
    for (const auto& e : doc.at("findings").at(0).at("probe_evidence"))
      ev += e.at("name").get<std::string>() + " = " + e.at("value").get<std::string>() + "\n";
    INFO(ev);
    CHECK(ev.find("TLSv1.3 session from a.test offered at b.test = handshake failed 4/4") !=
          std::string::npos);
    CHECK(ev.find("access denied") != std::string::npos);
    // TLS 1.2 resumes into b, and nginx answers 421 to the request (test_nginx_versions measures
    // the same with openssl s_client).
    CHECK(ev.find("TLSv1.2 session from a.test offered at b.test = resumed 4/4; HTTP 421 "
                  "Misdirected Request 4/4") != std::string::npos);
  }
}
void cross_two_certs(const nginx_version_entry& v) {
  cross_server(v, false);
}
void cross_one_cert(const nginx_version_entry& v) {
  cross_server(v, true);
}
NGINX_VERSION_CASES("check: a session from SNI a offered at a verifying SNI b, two certificates",
                    cross_two_certs)
NGINX_VERSION_CASES("check: a session from SNI a offered at a verifying SNI b, one certificate",
                    cross_one_cert)

void setting_ignored(const nginx_version_entry& v) {
  fixture fx;
  const std::string key = (fx.dir.path() / "b.key").string();
  tls::write_ticket_key_file(key, 80);
  fx.write(" ssl default_server", "", " ssl",
           "ssl_session_ticket_key " + key + "; ssl_session_timeout 60s;");
  // Every version seals b's tickets with a's key and a 300 s lifetime.
  expect(v, fx.conf, "session-setting-ignored",
         {{{"session-setting-ignored", 16}, "confirmed+confirmed"}});
}
NGINX_VERSION_CASES("check: ticket key file and timeout only in the name-based server",
                    setting_ignored)

void tickets_mismatch(const nginx_version_entry& v) {
  fixture fx;
  fx.write(" ssl default_server", "ssl_session_tickets off;", " ssl", "ssl_session_tickets on;");
  // a: no cache, stateful tickets, 0% on every version. b's tickets on: ignored (0%) up to
  // 1.26.3, honoured from 1.29.2 (lint then reports nothing for b).
  std::map<std::pair<std::string, int>, std::string> want{
      {{"tls13-resumption-disabled", 9}, "confirmed"}};
  if (v.slot != "1.30") want[{"tls13-resumption-disabled", 16}] = "confirmed";
  expect(v, fx.conf, "tls13-resumption-disabled", want);
}
NGINX_VERSION_CASES("check: tickets off in the default server and on in the name-based one",
                    tickets_mismatch)

void tls12_no_resumption(const nginx_version_entry& v) {
  fixture fx;
  const std::string off = "ssl_protocols TLSv1.2; ssl_session_tickets off;";
  fx.write(" ssl default_server", off, " ssl", off);
  // No ticket and no cache on a TLS 1.2-only socket: the TLS 1.2 runs resume nothing, on every
  // version (docs/nginx-facts.md#tls12-resumption).
  expect(v, fx.conf, "tls12-resumption-disabled",
         {{{"tls12-resumption-disabled", 9}, "confirmed"}});
  // With a shared cache there is nothing to report.
  fx.write(" ssl default_server", off + " ssl_session_cache shared:T:1m;", " ssl", off);
  expect(v, fx.conf, "tls12-resumption-disabled", {});
}
NGINX_VERSION_CASES(
    "check: TLS 1.2 only with tickets off and no cache is confirmed by the TLS 1.2 runs",
    tls12_no_resumption)

void ssl_on(const nginx_version_entry& v) {
  fixture fx;
  fx.write(" default_server", "ssl on;", " ssl", "");
  // 1.22.1: nginx -t warns that it is deprecated; from 1.25.1 nginx -t rejects it.
  expect(v, fx.conf, "obsolete-directive", {{{"obsolete-directive", 9}, "confirmed"}});
}
NGINX_VERSION_CASES("check: the ssl directive", ssl_on)

void listen_differ(const nginx_version_entry& v) {
  fixture fx;
  fx.write(" reuseport default_server", "", " ssl http2", "");
  // a lacks ssl and http2: nginx -t warns "protocol options redefined" from 1.23.4; on 1.22.1
  // the TLS handshake under a's name shows the socket's ssl applies to it. listen ... http2 is
  // deprecated from 1.25.1 (nginx -t warns).
  std::map<std::pair<std::string, int>, std::string> want{
      {{"listen-protocols-differ", 5}, "confirmed"}};
  if (v.slot != "1.22") want[{"obsolete-directive", 12}] = "confirmed";
  expect(v, fx.conf, "listen-protocols-differ,obsolete-directive", want);
}
NGINX_VERSION_CASES("check: one server listens with reuseport and another with ssl http2",
                    listen_differ)

}  // namespace

namespace {

void ssl_writer_not_started(const nginx_version_entry& v) {
  fixture fx;
  // a (plain, default_server) and b (ssl, default_server again): nginx -t rejects b's listen
  // (a duplicate default server), so b is not started and the sandbox adds ssl to a's listen to
  // keep the socket TLS. A handshake under a's name then shows nothing about the config.
  fx.write(" default_server", "", " ssl default_server", "");
  auto got = check_verdicts(v, fx.conf, "listen-protocols-differ");
  CHECK(got == std::map<std::pair<std::string, int>, std::string>{
                   {{"listen-protocols-differ", 5}, "not_testable"}});
}

}  // namespace

NGINX_VERSION_CASES("check: the server that wrote ssl is not started: no TLS handshake verdict",
                    ssl_writer_not_started)

namespace {

// The whole config's `nginx -t` (check --sandbox): nginx's verdict and the operator's own
// FILE:LINE, also for a file the main file includes.
nlohmann::json whole_config_check(const nginx_version_entry& v, const std::string& conf,
                                  int* rc = nullptr) {
  std::string err;
  auto j = ngxtls_json({"check", conf, "--sandbox", "--nginx", v.binary, "-n", "2", "--no-ocsp",
                        "--select", "obsolete-directive"},
                       rc, &err);
  INFO("check stderr: ", err);
  REQUIRE(j.contains("nginx_test"));
  std::cout << "  nginx " << v.version << " whole-config nginx -t: " << j.at("nginx_test").dump()
            << std::endl;
  return j;
}

void error_outside_tls(const nginx_version_entry& v) {
  fixture fx;
  fx.write(" ssl default_server", "include " + (fx.dir.path() / "site.conf").string() + ";", " ssl",
           "");
  // Line 4 of the included file: an unknown directive in a location, outside every TLS
  // directive the sandbox's own config copies.
  const std::string site =
      fx.dir.write("site.conf", "# app\nlocation /app {\n  root /srv;\n  frobnicate on;\n}\n");
  int rc = -1;
  auto j = whole_config_check(v, fx.conf, &rc);
  const auto& t = j.at("nginx_test");
  CHECK(t.at("verdict") == "rejected");
  CHECK(t.at("message") == "unknown directive \"frobnicate\"");
  CHECK(t.at("location").at("file") == site);
  CHECK(t.at("location").at("line") == 4);
  CHECK(t.at("location").at("column") == 3);
  CHECK(rc == 1);  // nginx would not start: no lint error predicted it
  REQUIRE(!j.at("errors").empty());
  CHECK(j.at("errors").at(0) == "nginx -t rejects " + site +
                                    ":4:3: unknown directive \"frobnicate\"; no lint rule "
                                    "predicted it, nginx would not start");
  // Text: nginx's verdict is the first line.
  auto r = run({ngxtls_binary(), "check", fx.conf, "--sandbox", "--nginx", v.binary, "-n", "2",
                "--no-ocsp", "--select", "obsolete-directive"},
               "", 60);
  CHECK(r.out.substr(0, r.out.find('\n')) ==
        "error: nginx -t rejects the config at " + site + ":4:3: unknown directive \"frobnicate\"");
}
NGINX_VERSION_CASES(
    "check: nginx -t of the whole config reports an error outside the TLS "
    "directives at the operator's file and line",
    error_outside_tls)

void ssl_on_whole(const nginx_version_entry& v) {
  fixture fx;
  fx.write(" default_server", "ssl on;", " ssl", "");
  auto j = whole_config_check(v, fx.conf);
  const auto& t = j.at("nginx_test");
  if (v.slot == "1.22") {
    // Deprecated, not removed: nginx -t passes and its warning confirms the finding.
    CHECK(t.at("verdict") == "passed");
  } else {
    // Removed in 1.25.1: nginx's own verdict, at the operator's line and column.
    CHECK(t.at("verdict") == "rejected");
    CHECK(t.at("message") == "unknown directive \"ssl\"");
    CHECK(t.at("location").at("file") == fx.conf);
    CHECK(t.at("location").at("line") == 9);
    CHECK(t.at("location").at("column") == 5);
  }
  REQUIRE(j.at("findings").size() == 1);
  CHECK(j.at("findings").at(0).at("verdict") == "confirmed");
}
NGINX_VERSION_CASES("check: nginx -t of the whole config on `ssl on;`", ssl_on_whole)

}  // namespace

namespace {

void baseline_whole(const nginx_version_entry& v) {
  fixture fx;
  fx.write(" ssl default_server", "", " ssl", "");
  const std::string base = (fx.dir.path() / "base.conf").string();
  std::filesystem::copy_file(fx.conf, base);
  fx.write(" ssl default_server", "location /x { frobnicate on; }", " ssl", "");
  // --baseline runs the deployed config first and reloads into the new one: nginx's verdict is
  // on the new one.
  std::string err;
  auto j =
      ngxtls_json({"check", fx.conf, "--baseline", base, "--sandbox", "--nginx", v.binary, "-n",
                   "2", "--no-ocsp", "--select", "obsolete-directive", "--fail-on", "never"},
                  nullptr, &err);
  INFO("check stderr: ", err);
  const auto& t = j.at("nginx_test");
  CHECK(t.at("verdict") == "rejected");
  CHECK(t.at("message") == "unknown directive \"frobnicate\"");
  CHECK(t.at("location").at("file") == fx.conf);
  CHECK(t.at("location").at("line") == 9);
}

}  // namespace

NGINX_VERSION_CASES(
    "check --baseline: nginx -t of the whole config tests the config being "
    "deployed",
    baseline_whole)
