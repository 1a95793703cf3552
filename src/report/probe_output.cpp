#include "report/probe_output.hpp"

#include <algorithm>
#include <sstream>

#include "probe/measurement.hpp"
#include "report/terminal_text.hpp"

namespace ngxtls::report {
namespace {

std::string safe_text(std::string_view s) {
  return terminal_safe(s);
}

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::vector<std::string> probe_verdicts(const probe::target_result& t) {
  std::vector<std::string> out;
  if (t.error) {
    out.push_back("cannot probe " + t.target + ": " + *t.error);
    if (t.protocols.empty() || !t.certificate) return out;
  }
  const auto& modules = probe::measurements();
  for (const auto& r : t.protocols)
    for (const auto* m : modules) m->run_verdicts(r, out);
  for (const auto* m : modules) m->target_verdicts(t, out);
  return out;
}

std::string probe_text(const std::vector<probe::target_result>& results, bool color) {
  std::ostringstream s;
  const char* bold = color ? "\033[1m" : "";
  const char* reset = color ? "\033[0m" : "";
  // Every string from the peer (certificate names, OCSP URLs, TLS errors) or from a target
  // list is escaped, line feeds too, so none can move the cursor, recolour the terminal or
  // forge a line of the report.
  probe::text_sink sink{s, safe_text};
  const auto& modules = probe::measurements();
  for (const auto& t : results) {
    s << bold << terminal_safe(t.target) << reset;
    if (!t.address.empty())
      s << " (" << terminal_safe(t.address)
        << (t.sni.empty() ? "" : ", SNI " + terminal_safe(t.sni)) << ")";
    s << "\n";
    for (const auto& v : probe_verdicts(t)) s << "  " << terminal_safe(v) << "\n";
    for (const auto& r : t.protocols) {
      if (r.connections == 0) continue;
      for (const auto* m : modules) m->run_text(r, sink);
    }
    // Target-level blocks in registry order, except a module that asks to go before another.
    std::vector<std::pair<std::string_view, std::string>> blocks;
    for (const auto* m : modules) {
      std::ostringstream b;
      probe::text_sink bs{b, safe_text};
      m->target_text(t, bs);
      blocks.emplace_back(m->name(), b.str());
    }
    for (const auto* m : modules) {
      const auto before = m->target_text_before();
      if (before.empty()) continue;
      auto self = std::find_if(blocks.begin(), blocks.end(),
                               [&](const auto& b) { return b.first == m->name(); });
      auto other = std::find_if(blocks.begin(), blocks.end(),
                                [&](const auto& b) { return b.first == before; });
      if (self != blocks.end() && other != blocks.end() && other < self)
        std::rotate(other, self, self + 1);
    }
    for (const auto& b : blocks) s << b.second;
  }
  return s.str();
}

nlohmann::json probe_json(const std::vector<probe::target_result>& results) {
  nlohmann::json targets = nlohmann::json::array();
  const auto& modules = probe::measurements();
  for (const auto& t : results) {
    nlohmann::json j;
    j["target"] = t.target;
    j["address"] = t.address;
    j["sni"] = t.sni;
    j["error"] = opt(t.error);
    j["elapsed_ms"] = t.elapsed_ms;
    j["verdicts"] = probe_verdicts(t);
    nlohmann::json protos = nlohmann::json::array();
    for (const auto& r : t.protocols) {
      nlohmann::json p;
      p["protocol"] = probe::to_string(r.protocol);
      p["mechanism"] = probe::to_string(r.mechanism);
      p["mode"] = probe::to_string(r.mode);
      p["supported"] = r.supported;
      p["error"] = opt(r.error);
      p["session_source"] = probe::to_string(r.session_source);
      p["session_offered"] = r.session_offered;
      p["session_id_issued"] = r.session_id_issued;
      p["offered_key_name"] = opt(r.offered_key_name);
      p["connections"] = r.connections;
      p["elapsed_ms"] = r.elapsed_ms;
      p["negotiated_protocol"] = r.negotiated_protocol;
      p["cipher"] = r.cipher;
      p["group"] = r.group;
      p["alpn"] = r.alpn;
      for (const auto* m : modules) m->run_json(r, p);
      protos.push_back(std::move(p));
    }
    j["protocols"] = std::move(protos);
    for (const auto* m : modules) m->target_json(t, j);
    targets.push_back(std::move(j));
  }
  return {{"targets", std::move(targets)}};
}

std::string probe_prometheus(const std::vector<probe::target_result>& results) {
  probe::metric_set m;
  m.declare("ngxtls_probe_up", "1 when the target could be probed, 0 when not");
  const auto& modules = probe::measurements();
  for (const auto* x : modules) x->declare_metrics(m);
  for (const auto& t : results) {
    std::string tl = "target=\"" + probe::label_value(t.target) + "\"";
    m.add("ngxtls_probe_up", tl, t.error ? 0 : 1);
    for (const auto& r : t.protocols) {
      if (r.connections == 0) continue;
      std::string l = tl + ",protocol=\"" + probe::to_string(r.protocol) + "\",mechanism=\"" +
                      probe::to_string(r.mechanism) + "\",mode=\"" + probe::to_string(r.mode) +
                      "\"";
      for (const auto* x : modules) x->run_metrics(r, l, m);
    }
    for (const auto* x : modules) x->target_metrics(t, tl, m);
  }
  return m.render();
}

}  // namespace ngxtls::report
