#include "check/load_findings.hpp"

#include <algorithm>
#include <cstdio>

#include "config/values.hpp"
#include "engine/engine.hpp"

namespace ngxtls::check {
namespace {

std::string per_s(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f/s", v);
  return buf;
}

}  // namespace

std::size_t target_for(const engine::finding& f, const std::vector<probe::target_result>& probes,
                       const std::map<int, int>& port_map) {
  auto on_ports = [&](const probe::target_result& r) {
    int port = config::port_of_address(r.address);
    if (auto it = port_map.find(port); it != port_map.end()) port = it->second;
    return f.ports.empty() || std::find(f.ports.begin(), f.ports.end(), port) != f.ports.end();
  };
  for (std::size_t i = 0; i < probes.size(); ++i)
    if (!probes[i].error && on_ports(probes[i]) && !f.server.empty() &&
        config::server_name_matches(f.server, probes[i].sni))
      return i;
  for (std::size_t i = 0; i < probes.size(); ++i)
    if (!probes[i].error && on_ports(probes[i])) return i;
  return probes.size();
}

bool is_resumption_rule(const std::string& rule) {
  const engine::rule* r = engine::find_rule(rule);
  return r != nullptr && r->costs_resumption;
}

void load_resumption_findings(const std::vector<check::checked_finding>& checked,
                              const std::vector<probe::target>& targets,
                              std::vector<probe::target_result>& probes,
                              const std::map<int, int>& port_map, const probe::load_options& o,
                              std::vector<std::string>& notes,
                              const std::function<void(const std::string&)>& say,
                              const std::function<std::string()>& interrupt_cause) {
  for (const auto& c : checked) {
    const auto& f = c.finding;
    if (!is_resumption_rule(f.rule)) continue;
    std::size_t i = target_for(f, probes, port_map);
    if (i >= probes.size() || i >= targets.size()) {
      notes.push_back("load: no probed sandbox target for " + f.rule +
                      (f.server.empty() ? "" : " at " + f.server));
      continue;
    }
    auto& r = probes[i];
    if (!r.load) {
      if (say)
        say("load on the sandbox target " + r.target +
            (r.sni.empty() ? "" : " (SNI " + r.sni + ")") + ": " + std::to_string(o.duration_s) +
            " s per phase, " + std::to_string(o.concurrency) + " in flight");
      r.load = probe::run_load(targets[i], r, o);
    }
    std::string where = f.rule + (f.server.empty() ? "" : " at " + f.server) + " (" + r.target +
                        (r.sni.empty() ? "" : ", SNI " + r.sni) + ")";
    if (r.load->interrupted) {
      notes.push_back("load: " + where + ": interrupted (" +
                      (interrupt_cause ? interrupt_cause() : std::string("Ctrl-C")) +
                      "), the figures are partial");
      if (r.load->prices.empty()) continue;
    }
    if (r.load->prices.empty()) {
      notes.push_back("load: " + where +
                      ": no resumed phase could be measured, so no capacity to price");
      continue;
    }
    for (const auto& p : r.load->prices) {
      char gain[32];
      std::snprintf(gain, sizeof gain, "%+.0f%%", p.gain * 100.0);
      char rate[32];
      std::snprintf(rate, sizeof rate, "%.0f%%", p.resumption_rate * 100.0);
      notes.push_back("load: " + where + ", " + probe::phase_label(p.resumed) + ": " +
                      per_s(p.today_per_s) + " at the measured " + rate + " resumption, " +
                      per_s(p.full_resumption_per_s) + " at full resumption (" + gain + ")");
    }
  }
}

}  // namespace ngxtls::check
