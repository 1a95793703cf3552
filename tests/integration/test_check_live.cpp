// ngxtls check --endpoint against a real nginx started here: verdicts rest on measurements.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/nginx_instance.hpp"
#include "support/ocsp_staples.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"
#include "tls/ticket_key.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using json = nlohmann::json;

namespace {

struct material {
  test::temp_dir dir;
  tls::pki_paths pki;
  std::string k1, k2;
  material() {
    pki = tls::make_pki((dir.path() / "pki").string(), {});
    k1 = (dir.path() / "k1.key").string();
    k2 = (dir.path() / "k2.key").string();
    tls::write_ticket_key_file(k1, 80);
    tls::write_ticket_key_file(k2, 80);
  }
};

std::string server_block(const material& m, int port, const std::string& extra) {
  return "server {\n  listen 127.0.0.1:" + std::to_string(port) +
         " ssl;\n  server_name example.com;\n"
         "  ssl_certificate " +
         m.pki.chain + ";\n  ssl_certificate_key " + m.pki.leaf_key +
         ";\n"
         "  ssl_protocols TLSv1.2 TLSv1.3;\n" +
         extra + "  location / { return 200 \"ok\\n\"; }\n}\n";
}

json check(const std::string& conf, const std::vector<std::string>& endpoints, int& rc) {
  std::vector<std::string> argv = {test::ngxtls_binary(),
                                   "check",
                                   conf,
                                   "--nginx-version",
                                   "1.22.1",
                                   "--format",
                                   "json",
                                   "-n",
                                   "8",
                                   "--fail-on",
                                   "never"};
  for (const auto& e : endpoints) {
    argv.push_back("--endpoint");
    argv.push_back(e);
  }
  auto r = test::run(argv, "", 120);
  rc = r.exit_code;
  INFO(r.err);
  REQUIRE(!r.out.empty());
  return json::parse(r.out);
}

const json* finding(const json& doc, const std::string& rule, const std::string& severity = "") {
  for (const auto& f : doc["findings"])
    if (f["rule"] == rule && (severity.empty() || f["severity"] == severity)) return &f;
  return nullptr;
}

}  // namespace

TEST_CASE(
    "tickets off without a cache and dead stapling are confirmed live, the key name is traced to "
    "its file") {
  material m;
  const int port = test::free_port();
  const std::string body = server_block(m, port,
                                        "  ssl_session_tickets off;\n  ssl_stapling on;\n"
                                        "  ssl_session_ticket_key " +
                                            m.k1 + ";\n");
  test::nginx_options o;
  o.wait_ports = {port};
  test::nginx_instance nginx(test::nginx_conf(2, body), o);
  int rc = 0;
  auto doc = check(nginx.conf_path().string(), {"127.0.0.1:" + std::to_string(port)}, rc);
  CHECK(rc == 0);
  const json* t13 = finding(doc, "tls13-resumption-disabled", "error");
  REQUIRE(t13);
  CHECK((*t13)["verdict"] ==
        "confirmed");  // docs/nginx-facts.md#tickets-off-tls13: tickets arrive, 0 resume
  const json* staple = finding(doc, "ocsp-stapling-dead", "warning");
  REQUIRE(staple);
  CHECK((*staple)["verdict"] == "confirmed");  // make_pki's default leaf has no OCSP URL
  CHECK_FALSE(doc["probe"]["targets"].empty());
}

TEST_CASE("a shared cache makes TLS 1.3 resume: the stateful note is confirmed, no error") {
  material m;
  const int port = test::free_port();
  const std::string body =
      server_block(m, port, "  ssl_session_tickets off;\n  ssl_session_cache shared:S:1m;\n");
  test::nginx_options o;
  o.wait_ports = {port};
  test::nginx_instance nginx(test::nginx_conf(2, body), o);
  int rc = 0;
  auto doc = check(nginx.conf_path().string(), {"127.0.0.1:" + std::to_string(port)}, rc);
  CHECK(finding(doc, "tls13-resumption-disabled", "error") == nullptr);
  const json* note = finding(doc, "tls13-resumption-disabled", "note");
  REQUIRE(note);
  CHECK((*note)["verdict"] == "confirmed");
}

TEST_CASE(
    "auto ticket keys: not testable on one instance, confirmed when a second master shares the "
    "port") {
  material m;
  const int port = test::free_port();
  const std::string body =
      "server {\n  listen 127.0.0.1:" + std::to_string(port) +
      " ssl reuseport;\n  server_name example.com;\n  ssl_certificate " + m.pki.chain +
      ";\n  ssl_certificate_key " + m.pki.leaf_key +
      ";\n  ssl_protocols TLSv1.2 TLSv1.3;\n  location / { return 200 \"ok\\n\"; }\n}\n";
  test::nginx_options o;
  o.wait_ports = {port};
  test::nginx_instance a(test::nginx_conf(1, body), o);
  int rc = 0;
  auto one = check(a.conf_path().string(), {"127.0.0.1:" + std::to_string(port)}, rc);
  const json* f1 = finding(one, "ticket-keys-not-shared");
  REQUIRE(f1);
  CHECK((*f1)["verdict"] == "not_testable");
  // A second master with its own automatic keys on the same port stands for a second host
  // behind one name (docs/nginx-facts.md#ticket-keys-per-instance): connections reach two key
  // domains.
  test::nginx_instance b(test::nginx_conf(1, body), o);
  auto two = check(a.conf_path().string(), {"127.0.0.1:" + std::to_string(port)}, rc);
  const json* f2 = finding(two, "ticket-keys-not-shared");
  REQUIRE(f2);
  CHECK((*f2)["verdict"] == "confirmed");
}

TEST_CASE("live mode reports a key name the linted config does not hold") {
  material m;
  const int port = test::free_port();
  test::nginx_options o;
  o.wait_ports = {port};
  // The endpoint seals with k2; the config under review lists k1.
  test::nginx_instance nginx(
      test::nginx_conf(1, server_block(m, port, "  ssl_session_ticket_key " + m.k2 + ";\n")), o);
  test::temp_dir reviewed;
  auto conf = reviewed.write(
      "nginx.conf",
      test::nginx_conf(1, server_block(m, port, "  ssl_session_ticket_key " + m.k1 + ";\n")));
  int rc = 0;
  auto doc = check(conf.string(), {"127.0.0.1:" + std::to_string(port)}, rc);
  bool mismatch = false;
  for (const auto& line : doc["key_names"])
    if (line.get<std::string>().find("no ssl_session_ticket_key of this config holds") !=
            std::string::npos &&
        line.get<std::string>().find(tls::inspect_ticket_key_file(m.k2).key_name_hex) !=
            std::string::npos)
      mismatch = true;
  CHECK(mismatch);
  // And with the deployed config itself, the key traces to its file.
  auto same = check(nginx.conf_path().string(), {"127.0.0.1:" + std::to_string(port)}, rc);
  REQUIRE(same["key_names"].size() == 1);
  CHECK(same["key_names"][0].get<std::string>().find(m.k2) != std::string::npos);
}

TEST_CASE("evidence from one listen socket never refutes a finding about another") {
  material m;
  const int p_off = test::free_port(), p_cache = test::free_port();
  std::string off = server_block(m, p_off, "  ssl_session_tickets off;\n");
  std::string cached = server_block(m, p_cache, "  ssl_session_cache shared:S:1m;\n");
  test::nginx_options o;
  o.wait_ports = {p_off, p_cache};
  test::nginx_instance nginx(test::nginx_conf(1, off + cached), o);
  int rc = 0;
  // Only the socket that resumes is probed: the tickets-off error of the other socket is
  // not testable here, not refuted.
  auto doc = check(nginx.conf_path().string(), {"127.0.0.1:" + std::to_string(p_cache)}, rc);
  const json* f = finding(doc, "tls13-resumption-disabled", "error");
  REQUIRE(f);
  CHECK((*f)["verdict"] == "not_testable");
  auto direct = check(nginx.conf_path().string(), {"127.0.0.1:" + std::to_string(p_off)}, rc);
  const json* g = finding(direct, "tls13-resumption-disabled", "error");
  REQUIRE(g);
  CHECK((*g)["verdict"] == "confirmed");
}

TEST_CASE(
    "a revoked staple: ocsp-staple-invalid confirmed in text, JSON and SARIF with exit 1; "
    "ocsp-stapling-dead not refuted") {
  material m;
  tls::pki_options po;
  po.ocsp_url = "http://127.0.0.1:9/";  // the file is the staple; the URL keeps stapling alive
  m.pki = tls::make_pki((m.dir.path() / "pki-url").string(), po);
  const std::string der =
      test::make_staple(m.pki, m.dir.path().string(), test::staple_kind::revoked);
  const int port = test::free_port();
  const std::string body =
      server_block(m, port, "  ssl_stapling on;\n  ssl_stapling_file " + der + ";\n");
  test::nginx_options o;
  o.wait_ports = {port};
  test::nginx_instance nginx(test::nginx_conf(1, body), o);
  const std::string endpoint = "127.0.0.1:" + std::to_string(port);
  const std::vector<std::string> base = {test::ngxtls_binary(),
                                         "check",
                                         nginx.conf_path().string(),
                                         "--nginx-version",
                                         "1.22.1",
                                         "--endpoint",
                                         endpoint,
                                         "-n",
                                         "2",
                                         "--tls1.3"};
  auto with = [&](std::vector<std::string> extra) {
    auto argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return test::run(argv, "", 120);
  };

  auto js = with({"--format", "json"});
  INFO(js.err);
  CHECK(js.exit_code == 1);  // an error finding, confirmed
  auto doc = json::parse(js.out);
  const json* bad = finding(doc, "ocsp-staple-invalid", "error");
  REQUIRE(bad);
  CHECK((*bad)["verdict"] == "confirmed");
  CHECK((*bad)["verdict_reason"].get<std::string>().find(
            "not valid: the certificate is revoked since ") != std::string::npos);
  CHECK((*bad)["message"].get<std::string>().find(
            "is not valid (revoked): the certificate is revoked since ") != std::string::npos);
  const std::string conf_text = test::read_file(nginx.conf_path());
  const auto at = conf_text.find("ssl_stapling_file");
  REQUIRE(at != std::string::npos);
  const int line =
      1 + static_cast<int>(std::count(conf_text.begin(), conf_text.begin() + at, '\n'));
  CHECK((*bad)["location"]["line"] == line);  // the server's ssl_stapling_file
  CHECK((*bad)["location"]["file"] == nginx.conf_path().string());
  CHECK(doc["summary"]["error"].get<int>() >= 1);
  const json* dead = finding(doc, "ocsp-stapling-dead");
  CHECK(dead == nullptr);  // stapling from a file: the lint rule has nothing to say
  CHECK(doc["probe"]["targets"][0]["ocsp"]["status"] == "invalid");

  auto text = with({});
  CHECK(text.exit_code == 1);
  CHECK(text.out.find("error [ocsp-staple-invalid] the OCSP staple served for " + endpoint) !=
        std::string::npos);
  CHECK(text.out.find("    confirmed: the probe got ") != std::string::npos);

  auto sarif = with({"--format", "sarif"});
  CHECK(sarif.exit_code == 1);
  auto log = json::parse(sarif.out);
  bool found = false, described = false;
  for (const auto& r : log["runs"][0]["results"])
    if (r["ruleId"] == "ocsp-staple-invalid") {
      found = true;
      CHECK(r["level"] == "error");
      CHECK(r["properties"]["verdict"] == "confirmed");
      CHECK(r.contains("ruleIndex"));
    }
  for (const auto& rule : log["runs"][0]["tool"]["driver"]["rules"])
    described = described || rule["id"] == "ocsp-staple-invalid";
  CHECK(found);
  CHECK(described);

  auto never = with({"--fail-on", "never"});
  CHECK(never.exit_code == 0);
}

TEST_CASE(
    "stapling dead by lint, but the endpoint staples garbage-bodied responses: not refuted, staple "
    "finding confirmed") {
  material m;  // make_pki's default leaf has no OCSP URL: ocsp-stapling-dead by lint
  const int port = test::free_port();
  const std::string body = server_block(m, port, "  ssl_stapling on;\n");
  // What runs is another config: the same server with a stapling file of junk inside a
  // successful response (nginx accepts it: the outer DER parses).
  tls::pki_options po;
  po.ocsp_url = "http://127.0.0.1:9/";
  auto served_pki = tls::make_pki((m.dir.path() / "served").string(), po);
  const std::string der = test::make_staple(served_pki, m.dir.path().string(),
                                            test::staple_kind::successful_garbage_body);
  test::nginx_options o;
  o.wait_ports = {port};
  const std::string live_body =
      "server {\n  listen 127.0.0.1:" + std::to_string(port) +
      " ssl;\n  server_name example.com;\n  ssl_certificate " + served_pki.chain +
      ";\n  ssl_certificate_key " + served_pki.leaf_key +
      ";\n  ssl_protocols TLSv1.2 TLSv1.3;\n  ssl_stapling on;\n  ssl_stapling_file " + der +
      ";\n}\n";
  test::nginx_instance nginx(test::nginx_conf(1, live_body), o);
  const auto linted = m.dir.write("linted.conf", test::nginx_conf(1, body));
  int rc = 0;
  auto doc = check(linted.string(), {"127.0.0.1:" + std::to_string(port)}, rc);
  const json* dead = finding(doc, "ocsp-stapling-dead", "warning");
  REQUIRE(dead);
  CHECK((*dead)["verdict"] == "not_testable");
  CHECK((*dead)["verdict_reason"] ==
        "a staple arrives on " +
            std::to_string(doc["probe"]["targets"][0]["ocsp"]["stapled"].get<int>()) + "/" +
            std::to_string(doc["probe"]["targets"][0]["ocsp"]["connections"].get<int>()) +
            " connections but " +
            std::to_string(doc["probe"]["targets"][0]["ocsp"]["stapled"].get<int>()) +
            " are not valid (malformed): see ocsp-staple-invalid");
  const json* bad = finding(doc, "ocsp-staple-invalid", "error");
  REQUIRE(bad);
  CHECK((*bad)["verdict"] == "confirmed");
  CHECK(
      (*bad)["message"].get<std::string>().find(
          "is not valid (malformed): responseStatus successful but no BasicOCSPResponse inside") !=
      std::string::npos);
}

TEST_CASE(
    "check --sandbox: a revoked ssl_stapling_file shows before deploy; with a stand-in certificate "
    "it is not judged") {
  test::temp_dir dir;
  tls::pki_options po;
  po.ocsp_url = "http://127.0.0.1:9/";
  auto pki = tls::make_pki((dir.path() / "pki").string(), po);
  const std::string der = test::make_staple(pki, dir.path().string(), test::staple_kind::revoked);
  auto conf_with = [&](const std::string& chain, const std::string& key) {
    return "events {}\nhttp {\n  server {\n    listen 443 ssl;\n    server_name localhost;\n"
           "    ssl_protocols TLSv1.2 TLSv1.3;\n    ssl_certificate " +
           chain + ";\n    ssl_certificate_key " + key +
           ";\n    ssl_stapling on;\n    ssl_stapling_file " + der + ";\n  }\n}\n";
  };
  auto sandbox = [&](const std::string& name, const std::string& text) {
    const auto conf = dir.write(name, text);
    auto r = test::run({test::ngxtls_binary(), "check", conf.string(), "--sandbox", "-n", "2",
                        "--tls1.3", "--format", "json"},
                       "", 180);
    INFO(r.err);
    REQUIRE(!r.out.empty());
    return std::make_pair(r.exit_code, json::parse(r.out));
  };
  auto [rc, doc] = sandbox("real.conf", conf_with(pki.chain, pki.leaf_key));
  const json* bad = finding(doc, "ocsp-staple-invalid", "error");
  REQUIRE(bad);
  CHECK((*bad)["verdict"] == "confirmed");
  CHECK((*bad)["location"]["line"] == 10);
  CHECK(rc == 1);
  // Certificate files missing here run as stand-ins; the staple file is the real certificate's.
  auto [rc2, doc2] = sandbox("standin.conf", conf_with((dir.path() / "missing.pem").string(),
                                                       (dir.path() / "missing.key").string()));
  CHECK(doc2["probe"]["targets"][0]["ocsp"]["staple_status"] == "other_certificate");
  CHECK(finding(doc2, "ocsp-staple-invalid") == nullptr);
}

namespace {

/// The value of the probe evidence named `name` of finding `f`, or "" when absent.
std::string evidence_value(const json& f, const std::string& name) {
  for (const auto& e : f["probe_evidence"])
    if (e["name"] == name) return e["value"].get<std::string>();
  return "";
}

}  // namespace

TEST_CASE(
    "return 444 in a TLS server: tls-return-444 confirmed live by the close without close_notify "
    "and the strict client, refuted where the endpoint answers") {
  material m;
  const int port = test::free_port();
  // A shared cache: every run (TLS 1.3 ticket, TLS 1.2 ticket, TLS 1.2 session ID) resumes for
  // the prober, so the strict client's 0 stands beside the prober's 8 per run.
  const std::string cache = "  ssl_session_cache shared:S:1m;\n";
  test::nginx_options o;
  o.wait_ports = {port};
  test::nginx_instance nginx(test::nginx_conf(1, server_block(m, port, cache + "  return 444;\n")),
                             o);
  const std::string endpoint = "127.0.0.1:" + std::to_string(port);
  // Independently of the prober: openssl s_client sees the connection end with no alert.
  const std::string head = "HEAD / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n";
  auto saw_close_notify = [&](int at) {
    auto r = test::run({"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(at),
                        "-servername", "example.com", "-tls1_3", "-msg", "-ign_eof"},
                       head, 20);
    return r.out.find("Alert [length 0002], warning close_notify") != std::string::npos;
  };
  REQUIRE_FALSE(saw_close_notify(port));
  int rc = 0;
  auto doc = check(nginx.conf_path().string(), {endpoint}, rc);
  const json* f = finding(doc, "tls-return-444", "note");
  REQUIRE(f);
  CHECK((*f)["verdict"] == "confirmed");
  // Every connection the probe read to its end, counted from the probe's own record of them:
  // none ended with close_notify.
  int ended = 0;
  const auto& runs = doc["probe"]["targets"][0]["protocols"];
  REQUIRE(runs.size() == 3);
  for (const auto& run : runs) {
    CHECK(run["server_close"]["close_notify"] == 0);
    ended += run["server_close"]["eof"].get<int>() + run["server_close"]["reset"].get<int>();
    CHECK(run["resumed"] == 8);
    CHECK(run["strict_client"]["attempts"] == 8);
    CHECK(run["strict_client"]["resumed"] == 0);
  }
  // At least the first handshake and the 8 attempts of each of the 3 runs.
  CHECK(ended >= 3 * 9);
  CHECK(evidence_value(*f, "closed without close_notify") ==
        std::to_string(ended) + "/" + std::to_string(ended) + " connections");
  CHECK(evidence_value(*f, "strict client resumed") == "0/24 (prober: 24/24)");
  CHECK((*f)["verdict_reason"] ==
        "connections end without close_notify, and clients that read to EOF resume 0/24");

  // The config under review returns 444; the endpoint deployed answers 200, with close_notify.
  const int answering = test::free_port();
  o.wait_ports = {answering};
  test::nginx_instance deployed(test::nginx_conf(1, server_block(m, answering, cache)), o);
  REQUIRE(saw_close_notify(answering));
  const auto reviewed = m.dir.write(
      "reviewed.conf", test::nginx_conf(1, server_block(m, answering, cache + "  return 444;\n")));
  auto clean = check(reviewed.string(), {"127.0.0.1:" + std::to_string(answering)}, rc);
  const json* g = finding(clean, "tls-return-444", "note");
  REQUIRE(g);
  CHECK((*g)["verdict"] == "refuted");
  CHECK((*g)["verdict_reason"] == "every connection ended with close_notify");
  int clean_ended = 0;
  for (const auto& run : clean["probe"]["targets"][0]["protocols"]) {
    CHECK(run["server_close"]["eof"] == 0);
    CHECK(run["server_close"]["reset"] == 0);
    clean_ended += run["server_close"]["close_notify"].get<int>();
    CHECK(run["strict_client"]["resumed"] == 8);
  }
  CHECK(clean_ended >= 3 * 9);
  CHECK(evidence_value(*g, "closed without close_notify") ==
        "0/" + std::to_string(clean_ended) + " connections");
  CHECK(evidence_value(*g, "strict client resumed") == "24/24 (prober: 24/24)");
}
