#include "cli/check_load.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/interrupt.hpp"
#include "engine/engine.hpp"
#include "report/terminal_text.hpp"

namespace ngxtls::cli {
namespace {

int port_of(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return 0;
  try {
    return std::stoi(address.substr(colon + 1));
  } catch (...) {
    return 0;
  }
}

// The probed target that speaks for `f`: its server name, else one on its ports.
std::size_t target_for(const engine::finding& f, const std::vector<probe::target_result>& probes,
                       const std::map<int, int>& port_map) {
  auto on_ports = [&](const probe::target_result& r) {
    int port = port_of(r.address);
    if (auto it = port_map.find(port); it != port_map.end()) port = it->second;
    return f.ports.empty() || std::find(f.ports.begin(), f.ports.end(), port) != f.ports.end();
  };
  for (std::size_t i = 0; i < probes.size(); ++i)
    if (!probes[i].error && on_ports(probes[i]) && !f.server.empty() && probes[i].sni == f.server)
      return i;
  for (std::size_t i = 0; i < probes.size(); ++i)
    if (!probes[i].error && on_ports(probes[i])) return i;
  return probes.size();
}

std::string per_s(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f/s", v);
  return buf;
}

}  // namespace

bool is_resumption_rule(const std::string& rule) {
  const engine::rule* r = engine::find_rule(rule);
  return r != nullptr && r->costs_resumption;
}

void load_resumption_findings(const std::vector<check::checked_finding>& checked,
                              const std::vector<probe::target>& targets,
                              std::vector<probe::target_result>& probes,
                              const std::map<int, int>& port_map, const probe::load_options& o,
                              std::vector<std::string>& notes) {
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
      std::cerr << "ngxtls: load on the sandbox target " << report::terminal_safe(r.target)
                << (r.sni.empty() ? "" : " (SNI " + report::terminal_safe(r.sni) + ")") << ": "
                << o.duration_s << " s per phase, " << o.concurrency << " in flight\n";
      r.load = probe::run_load(targets[i], r, o);
    }
    std::string where = f.rule + (f.server.empty() ? "" : " at " + f.server) + " (" + r.target +
                        (r.sni.empty() ? "" : ", SNI " + r.sni) + ")";
    if (r.load->interrupted) {
      notes.push_back("load: " + where + ": interrupted (" + interrupt_guard::cause() +
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

}  // namespace ngxtls::cli
