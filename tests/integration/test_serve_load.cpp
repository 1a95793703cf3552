// Load: 1,000 targets (distinct SNI names behind one nginx) scraped every 15 s by a real
// Prometheus through `ngxtls serve` for 150 s. The exporter's memory stays bounded, no scrape
// fails or exceeds its timeout, and nginx's own access log shows each name probed at most once
// per min_interval_seconds. The figures are printed (MESSAGE) for the closing note.
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "probe_util.hpp"
#include "serve_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

constexpr int targets = 1000;
constexpr int scrape_interval_s = 15;
constexpr int min_interval_s = 60;
constexpr int run_s = 150;

std::string name_of(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "t%04d.load.test", i);
  return buf;
}

// A one-number instant query; NaN when the result is empty.
double scalar_query(int port, const std::string& promql) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(std::chrono::seconds(30));
  auto r = c.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!r || r->status != 200) return std::nan("");
  auto j = nlohmann::json::parse(r->body);
  const auto& res = j.at("data").at("result");
  if (res.empty()) return std::nan("");
  return std::stod(res.at(0).at("value").at(1).get<std::string>());
}

// Access-log lines per SNI name.
std::map<std::string, int> lines_per_name(const std::filesystem::path& log) {
  std::map<std::string, int> out;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) ++out[line];
  return out;
}

std::string metrics_of(const serve_process& s) {
  auto c = s.client();
  auto r = c.Get("/metrics");
  return r && r->status == 200 ? r->body : std::string();
}

// kB of a "VmHWM:" style line of /proc/PID/status.
long status_kb(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}

}  // namespace

TEST_CASE("load: 1000 targets behind one nginx scraped every 15 s by Prometheus for 150 s") {
  if (run({"sh", "-c", "command -v prometheus"}, "", 10).exit_code != 0)
    return skip_test("prometheus is not installed (Debian package prometheus)");
  temp_dir d;
  tls::pki_options po;
  po.dns_names = {"*.load.test"};
  auto pki = tls::make_pki((d.path() / "pki").string(), po);
  const int port = free_port();
  const auto access_log = d.path() / "access.log";
  nginx_options no;
  no.wait_ports = {port};
  // One line per connection (the probe sends HEAD / on each): the server's own count.
  const std::string server =
      "log_format sni '$ssl_server_name';\nserver {\n  listen 127.0.0.1:" + std::to_string(port) +
      " ssl;\n  server_name *.load.test;\n  ssl_protocols TLSv1.2 TLSv1.3;\n  ssl_certificate " +
      pki.chain + ";\n  ssl_certificate_key " + pki.leaf_key + ";\n  access_log " +
      access_log.string() + " sni;\n  location / { return 200 \"ok\\n\"; }\n}\n";
  nginx_instance ngx(nginx_conf(2, server), no);

  serve_process srv(d,
                    "allow = [\"*.load.test:" + std::to_string(port) +
                        "\"]\nmin_interval_seconds = " + std::to_string(min_interval_s) +
                        "\nmax_probes_in_flight = 8\n[modules.default]\nconnect = "
                        "\"127.0.0.1\"\nprotocols = [\"TLSv1.3\"]\nattempts = 2\nocsp = false\n");
  // Connections per probe, from nginx's log for one probe of a name outside the scraped set.
  {
    auto r = srv.probe("calibrate.load.test:" + std::to_string(port));
    REQUIRE(r);
    REQUIRE(r->status == 200);
    REQUIRE(sample(r->body, "ngxtls_probe_success") == 1);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // nginx writes the log lines
  const int per_probe = lines_per_name(access_log)["calibrate.load.test"];
  REQUIRE(per_probe >= 3);  // the first handshake and 2 attempts

  std::string list;
  for (int i = 0; i < targets; ++i)
    list += "          - " + name_of(i) + ":" + std::to_string(port) + "\n";
  const std::string conf =
      "global:\n  scrape_interval: " + std::to_string(scrape_interval_s) +
      "s\n  scrape_timeout: 10s\nscrape_configs:\n  - job_name: ngxtls\n    metrics_path: /probe\n"
      "    static_configs:\n      - targets:\n" +
      list +
      "    relabel_configs:\n      - source_labels: [__address__]\n        target_label: "
      "__param_target\n      - source_labels: [__param_target]\n        target_label: instance\n"
      "      - target_label: __address__\n        replacement: 127.0.0.1:" +
      std::to_string(srv.port) +
      "\n  - job_name: ngxtls_exporter\n    scrape_interval: 5s\n    static_configs:\n      - "
      "targets: ['127.0.0.1:" +
      std::to_string(srv.port) + "']\n";
  auto conf_path = d.write("prometheus.yml", conf);
  const int prom_port = free_port();
  const auto t0 = std::chrono::steady_clock::now();
  server_process prometheus({"prometheus", "--config.file=" + conf_path.string(),
                             "--storage.tsdb.path=" + (d.path() / "tsdb").string(),
                             "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
                            (d.path() / "prometheus.log").string(), prom_port, 30000);
  std::this_thread::sleep_for(std::chrono::seconds(run_s));
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string window = "[" + std::to_string(run_s + 60) + "s]";

  INFO(
      "exporter log (tail):\n"
      << srv.proc->log().substr(srv.proc->log().size() > 4000 ? srv.proc->log().size() - 4000 : 0));
  const double scrapes =
      scalar_query(prom_port, "sum(count_over_time(up{job=\"ngxtls\"}" + window + "))");
  // Samples of up == 0: all samples minus the sum of their values (each 0 or 1), in one query
  // so that both see the same samples.
  const double failed =
      scalar_query(prom_port, "sum(count_over_time(up{job=\"ngxtls\"}" + window +
                                  ") - sum_over_time(up{job=\"ngxtls\"}" + window + "))");
  const double slowest = scalar_query(
      prom_port, "max(max_over_time(scrape_duration_seconds{job=\"ngxtls\"}" + window + "))");
  const double scraped_targets =
      scalar_query(prom_port, "count(count_over_time(up{job=\"ngxtls\"}" + window + "))");
  const double rss_max = scalar_query(
      prom_port,
      "max_over_time(process_resident_memory_bytes{job=\"ngxtls_exporter\"}" + window + ")");
  // Straight from the exporter, after Prometheus's counts: every scrape Prometheus recorded
  // was answered by a probe or from the cache before this.
  const std::string own = metrics_of(srv);
  const double probes =
      sample(own, "ngxtls_serve_probes_total{module=\"default\",result=\"success\"}") +
      sample(own, "ngxtls_serve_probes_total{module=\"default\",result=\"failure\"}");
  const double hits = sample(own, "ngxtls_serve_cache_hits_total");
  const long hwm_kb = status_kb(srv.proc->pid(), "VmHWM");
  const long rss_kb = status_kb(srv.proc->pid(), "VmRSS");

  // nginx's count: at most floor(elapsed / min_interval) + 1 probes per name.
  const auto per_name = lines_per_name(access_log);
  const int allowed_probes = static_cast<int>(elapsed_s / min_interval_s) + 1;
  int names = 0, most_lines = 0;
  for (int i = 0; i < targets; ++i) {
    auto it = per_name.find(name_of(i));
    if (it == per_name.end()) continue;
    ++names;
    most_lines = std::max(most_lines, it->second);
  }
  MESSAGE("load: " << targets << " targets, " << elapsed_s << " s, " << scrapes << " scrapes ("
                   << failed << " failed), slowest scrape " << slowest << " s, probes run "
                   << probes << ", cache hits " << hits << ", exporter RSS max (Prometheus) "
                   << rss_max / 1048576 << " MiB, VmHWM " << hwm_kb / 1024 << " MiB, VmRSS now "
                   << rss_kb / 1024 << " MiB; most connections to one name " << most_lines << " ("
                   << per_probe << " per probe, at most " << allowed_probes << " probes allowed)");
  CHECK(scraped_targets == targets);
  // Every target scraped about run_s / 15 times (Prometheus spreads the first scrapes over
  // one interval).
  CHECK(scrapes >= targets * (run_s / scrape_interval_s - 2));
  CHECK(failed == 0);
  CHECK(slowest < 10);
  CHECK(names == targets);
  CHECK(most_lines <= allowed_probes * per_probe);
  // Fewer probes than scrapes: the cache answered the rest.
  CHECK(probes <= targets * allowed_probes + 1);
  CHECK(hits + probes >= scrapes);
  CHECK(hits > 2 * probes);
  // Bounded: 1000 cached results are a few MB; the whole exporter stays far below 256 MiB.
  CHECK(hwm_kb > 0);
  CHECK(hwm_kb < 256 * 1024);
}
