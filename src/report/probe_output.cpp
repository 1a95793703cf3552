#include "report/probe_output.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <tuple>

#include "probe/measurement.hpp"
#include "report/terminal_text.hpp"
#include "tls/ciphers.hpp"

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

namespace {

// The families of the run's identity and of the whole probe (the plan's, not a module's), then
// every module's, in registry order.
void declare_probe_metrics(probe::metric_set& m, bool with_age) {
  m.declare("ngxtls_probe_success", "1 when the target was probed to the end, 0 when not");
  m.declare("ngxtls_probe_duration_seconds", "How long the probe of the target took, seconds");
  if (with_age)
    m.declare("ngxtls_probe_result_age_seconds",
              "Seconds since the served result was measured (0: measured for this scrape; "
              "more: reused within min_interval_seconds)");
  m.declare("ngxtls_build_info", build_info_help);
  m.declare("ngxtls_tls_version_info",
            "1 for each TLS version the server negotiated when asked for it (version as "
            "OpenSSL names it: TLSv1.3, TLSv1.2)");
  m.declare("ngxtls_tls_cipher_info",
            "1 for each cipher suite and key exchange group the server chose, by TLS version");
  m.declare("ngxtls_probe_run_duration_seconds",
            "How long each run of the probe (protocol, mechanism, mode) took, seconds");
  for (const auto* x : probe::measurements()) x->declare_metrics(m);
}

}  // namespace

std::string probe_prometheus(const std::vector<probe::target_result>& results,
                             const prometheus_options& options) {
  probe::metric_set m;
  declare_probe_metrics(m, options.result_age_seconds.has_value());
  const auto& modules = probe::measurements();
  m.add("ngxtls_build_info", build_info_labels(), 1);
  for (const auto& t : results) {
    probe::label_set tl;
    if (options.target_label) tl.emplace_back("target", t.target);
    m.add("ngxtls_probe_success", tl, t.error ? 0 : 1);
    m.add("ngxtls_probe_duration_seconds", tl,
          options.duration_seconds.value_or(t.elapsed_ms / 1000.0));
    if (options.result_age_seconds)
      m.add("ngxtls_probe_result_age_seconds", tl, *options.result_age_seconds);
    // One sample per version and per (version, cipher, group), however many runs saw it.
    std::set<std::string> versions;
    std::set<std::tuple<std::string, std::string, std::string>> ciphers;
    for (const auto& r : t.protocols) {
      if (r.connections == 0) continue;
      if (!r.negotiated_protocol.empty() && versions.insert(r.negotiated_protocol).second)
        m.add("ngxtls_tls_version_info", probe::with_label(tl, "version", r.negotiated_protocol),
              1);
      if (!r.cipher.empty() && ciphers.emplace(r.negotiated_protocol, r.cipher, r.group).second)
        m.add("ngxtls_tls_cipher_info",
              probe::with_label(
                  probe::with_label(probe::with_label(tl, "version", r.negotiated_protocol),
                                    "cipher", r.cipher),
                  "group", r.group),
              1);
      probe::label_set l = probe::with_label(tl, "protocol", probe::to_string(r.protocol));
      l = probe::with_label(std::move(l), "mechanism", probe::to_string(r.mechanism));
      l = probe::with_label(std::move(l), "mode", probe::to_string(r.mode));
      m.add("ngxtls_probe_run_duration_seconds", l, r.elapsed_ms / 1000.0);
      for (const auto* x : modules) x->run_metrics(r, l, m);
    }
    for (const auto* x : modules) x->target_metrics(t, tl, m);
  }
  return m.render();
}

probe::label_set build_info_labels() {
  return {{"version", NGXTLS_VERSION}, {"openssl_version", tls::openssl_version()}};
}

std::vector<std::string> probe_metric_families() {
  probe::metric_set m;
  declare_probe_metrics(m, true);
  return m.names();
}

}  // namespace ngxtls::report
