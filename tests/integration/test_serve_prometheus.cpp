// A real Prometheus (Debian package) on loopback scrapes `ngxtls serve` with the
// multi-target configuration and the rules of docs/prometheus/, and the exporter probes real
// nginx instances: one healthy, two masters behind one port, one with tickets off and no cache,
// one that speaks TLS 1.2 only and resumes nothing.
// Also `promtool check rules` and `promtool test rules` on the documented rules.
#include <doctest/doctest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "probe_util.hpp"
#include "serve_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

std::filesystem::path docs_dir() {
  return source_dir() / "docs" / "prometheus";
}

bool have(const std::string& tool) {
  return run({"sh", "-c", "command -v " + tool}, "", 10).exit_code == 0;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("\"" + from + "\" not found");
  return text.replace(at, from.size(), to);
}

std::string replaced_all(std::string text, const std::string& from, const std::string& to) {
  std::size_t at = 0;
  int n = 0;
  while ((at = text.find(from, at)) != std::string::npos) {
    text.replace(at, from.size(), to);
    at += to.size();
    ++n;
  }
  if (n == 0) throw std::runtime_error("\"" + from + "\" not found");
  return text;
}

// GET Prometheus's HTTP API; the parsed "data" member.
nlohmann::json api(int port, const std::string& path, const httplib::Params& params = {}) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(std::chrono::seconds(10));
  auto r = c.Get(path, params, httplib::Headers{});
  if (!r || r->status != 200) return nullptr;
  auto j = nlohmann::json::parse(r->body);
  return j.at("status") == "success" ? j.at("data") : nlohmann::json();
}

// instance -> value of an instant query.
std::map<std::string, double> query(int port, const std::string& promql) {
  std::map<std::string, double> out;
  auto data = api(port, "/api/v1/query", {{"query", promql}});
  if (data.is_null()) return out;
  for (const auto& s : data.at("result"))
    out[s.at("metric").value("instance", "")] = std::stod(s.at("value").at(1).get<std::string>());
  return out;
}

// (alertname, instance) of the alerts in `state` ("firing", "pending").
std::set<std::pair<std::string, std::string>> alerts(int port, const std::string& state) {
  std::set<std::pair<std::string, std::string>> out;
  auto data = api(port, "/api/v1/alerts");
  if (data.is_null()) return out;
  for (const auto& a : data.at("alerts"))
    if (a.at("state") == state)
      out.emplace(a.at("labels").at("alertname"), a.at("labels").value("instance", ""));
  return out;
}

}  // namespace

TEST_CASE("promtool: the documented rules are valid and their unit tests pass") {
  if (!have("promtool")) {
    skip_test("promtool is not installed (Debian package prometheus; scripts/install-deps.sh)");
    return;
  }
  auto check =
      run({"promtool", "check", "rules", (docs_dir() / "ngxtls-rules.yml").string()}, "", 60);
  INFO(check.out << check.err);
  CHECK(check.exit_code == 0);
  auto t =
      run({"promtool", "test", "rules", (docs_dir() / "ngxtls-rules.test.yml").string()}, "", 60);
  INFO(t.out << t.err);
  CHECK(t.exit_code == 0);
  CHECK(t.out.find("SUCCESS") != std::string::npos);
  auto cfg = run(
      {"promtool", "check", "config", "--syntax-only", (docs_dir() / "prometheus.yml").string()},
      "", 60);
  INFO(cfg.out << cfg.err);
  CHECK(cfg.exit_code == 0);
  // The documented exporter config loads.
  auto serve_check = run({ngxtls_binary(), "serve", "--config",
                          (docs_dir() / "serve.toml").string(), "--listen", "127.0.0.1:99999"},
                         "", 30);
  CHECK(serve_check.exit_code == 2);  // only the port is wrong
  CHECK(serve_check.err.find("--listen: the port must be") != std::string::npos);
}

TEST_CASE(
    "prometheus scrapes ngxtls serve: healthy ratio 1 and two masters about 1/2 with two key "
    "names and tickets off without cache 0 and TLS 1.2 only at 0 and the alerts fire for the "
    "broken ones only") {
  if (!have("prometheus")) {
    skip_test("prometheus is not installed (Debian package prometheus; scripts/install-deps.sh)");
    return;
  }
  temp_dir d;
  auto pki = tls::make_pki((d.path() / "pki").string(), {});
  nginx_options no;
  const int healthy_port = free_port(), masters_port = free_port(), off_port = free_port(),
            tls12_port = free_port();
  no.wait_ports = {healthy_port};
  nginx_instance healthy(
      nginx_conf(1, tls_server(healthy_port, pki, "ssl_session_cache shared:SSL:1m;")), no);
  no.wait_ports = {masters_port};
  const std::string masters_conf = nginx_conf(1, tls_server(masters_port, pki, "", "reuseport"));
  nginx_instance master_a(masters_conf, no);
  nginx_instance master_b(masters_conf, no);
  no.wait_ports = {off_port};
  nginx_instance off(nginx_conf(1, tls_server(off_port, pki, "ssl_session_tickets off;")), no);
  // TLS 1.2 alone, tickets off and no session cache: nothing resumes, and no TLS 1.3 run has a
  // sample to alert on.
  no.wait_ports = {tls12_port};
  nginx_instance tls12(
      nginx_conf(1, "server {\n  listen 127.0.0.1:" + std::to_string(tls12_port) +
                        " ssl;\n  ssl_protocols TLSv1.2;\n  ssl_session_tickets off;\n"
                        "  ssl_certificate " +
                        pki.chain + ";\n  ssl_certificate_key " + pki.leaf_key +
                        ";\n  location / { return 200 \"ok\\n\"; }\n}\n"),
      no);

  const std::string healthy_t = "127.0.0.1:" + std::to_string(healthy_port);
  const std::string masters_t = "127.0.0.1:" + std::to_string(masters_port);
  const std::string off_t = "127.0.0.1:" + std::to_string(off_port);
  const std::string tls12_t = "127.0.0.1:" + std::to_string(tls12_port);
  serve_process srv(d, "allow = [\"" + healthy_t + "\", \"" + masters_t + "\", \"" + off_t +
                           "\", \"" + tls12_t +
                           "\"]\nmin_interval_seconds = 1\n[modules.default]\nattempts = 20\n"
                           "ocsp = false\n");

  // The documented rules with their `for:` shortened, so that the test does not wait 15 min
  // (promtool test rules above checks the documented durations).
  std::string rules = read_file(docs_dir() / "ngxtls-rules.yml");
  rules = replaced_all(rules, "for: 15m", "for: 6s");
  auto rules_path = d.write("ngxtls-rules.yml", rules);
  // The documented scrape configuration with this test's targets, ports and intervals.
  std::string conf = read_file(docs_dir() / "prometheus.yml");
  conf = replaced(conf, "scrape_interval: 60s", "scrape_interval: 3s");
  conf = replaced(conf, "scrape_timeout: 10s", "scrape_timeout: 3s");
  conf = replaced(conf, "evaluation_interval: 60s", "evaluation_interval: 1s");
  conf = replaced(conf, "  - ngxtls-rules.yml", "  - " + rules_path.string());
  conf = replaced(conf, "          - www.example.com:443\n          - api.example.com:443\n",
                  "          - " + healthy_t + "\n          - " + masters_t + "\n          - " +
                      off_t + "\n          - " + tls12_t + "\n");
  conf = replaced_all(conf, "127.0.0.1:10924", "127.0.0.1:" + std::to_string(srv.port));
  auto conf_path = d.write("prometheus.yml", conf);
  const int prom_port = free_port();
  server_process prometheus({"prometheus", "--config.file=" + conf_path.string(),
                             "--storage.tsdb.path=" + (d.path() / "tsdb").string(),
                             "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
                            (d.path() / "prometheus.log").string(), prom_port, 30000);

  // Wait for both broken endpoints' alerts to fire (a few scrapes and 6 s of `for`).
  const std::pair<std::string, std::string> masters_low{"NgxtlsResumptionRatioLow", masters_t},
      off_low{"NgxtlsResumptionRatioLow", off_t},
      masters_keys{"NgxtlsSeveralTicketKeys", masters_t},
      tls12_low{"NgxtlsResumptionRatioLow", tls12_t};
  std::set<std::pair<std::string, std::string>> firing;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    firing = alerts(prom_port, "firing");
    if (firing.count(masters_low) && firing.count(off_low) && firing.count(masters_keys) &&
        firing.count(tls12_low))
      break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  INFO("prometheus log:\n" << prometheus.log() << "\nexporter log:\n" << srv.proc->log());
  CHECK(firing.count(masters_low) == 1);
  CHECK(firing.count(off_low) == 1);
  CHECK(firing.count(masters_keys) == 1);
  CHECK(firing.count(tls12_low) == 1);
  // Nothing about the healthy endpoint, firing or pending; no failing probe anywhere.
  for (const char* state : {"firing", "pending"})
    for (const auto& [name, instance] : alerts(prom_port, state)) {
      // CAPTURE's lambda cannot capture a structured binding under clang 14: a named reference.
      const auto& name_shown = name;
      CAPTURE(name_shown);
      CHECK(instance != healthy_t);
      CHECK(name != "NgxtlsProbeFailing");
    }

  const auto ratio =
      query(prom_port, "ngxtls_resumption_ratio{job=\"ngxtls\",protocol=\"TLSv1.3\"}");
  REQUIRE(ratio.size() == 3);
  CHECK(ratio.at(healthy_t) == 1);
  CHECK(ratio.at(off_t) == 0);
  // resumed ~ Binomial(20, 1/2) per scrape: [0.1, 0.9] holds but with p < 5e-4.
  CHECK(ratio.at(masters_t) >= 0.1);
  CHECK(ratio.at(masters_t) <= 0.9);
  const auto keys = query(prom_port, "ngxtls_ticket_key_names{protocol=\"TLSv1.3\"}");
  CHECK(keys.at(healthy_t) == 1);
  CHECK(keys.at(masters_t) == 2);
  const auto success = query(prom_port, "ngxtls_probe_success");
  CHECK(success.at(healthy_t) == 1);
  CHECK(success.at(masters_t) == 1);
  CHECK(success.at(off_t) == 1);
  CHECK(success.at(tls12_t) == 1);
  const auto tls12_ratio = query(
      prom_port, "max by (instance) (ngxtls_resumption_ratio{protocol=\"TLSv1.2\",instance=\"" +
                     tls12_t + "\"})");
  CHECK(tls12_ratio.at(tls12_t) == 0);
  // The endpoint spoke no TLS 1.3: no TLS 1.3 sample of it.
  CHECK(
      query(prom_port, "ngxtls_resumption_ratio{protocol=\"TLSv1.3\",instance=\"" + tls12_t + "\"}")
          .empty());
  const auto recorded = query(prom_port, "instance:ngxtls_ticket_key_names:max");
  CHECK(recorded.at(masters_t) == 2);
  // The exporter's own job: scraped, and it ran probes.
  const auto probes = query(prom_port, "sum(ngxtls_serve_probes_total{result=\"success\"})");
  REQUIRE(probes.size() == 1);
  CHECK(probes.begin()->second >= 3);
  // No scrape hit its timeout.
  const auto up = query(prom_port, "up{job=\"ngxtls\"}");
  CHECK(up.size() == 4);
  for (const auto& [instance, v] : up) CHECK(v == 1);
}
