#include "report/check_output.hpp"

#include <nlohmann/json.hpp>

#include "report/probe_output.hpp"

namespace ngxtls::report {

std::string render_check_text(const check_report& r, bool color) {
  std::string out;
  const char* reset = color ? "\x1b[0m" : "";
  for (const auto& c : r.checked) {
    const auto& f = c.finding;
    const char* vc = !color ? "" : c.result == check::verdict::confirmed ? "\x1b[1;31m"
                                 : c.result == check::verdict::refuted   ? "\x1b[1;32m"
                                                                         : "\x1b[1;33m";
    out += to_string(f.location) + ": " + engine::to_string(f.level) + " [" + f.rule + "] " + f.message + '\n';
    out += std::string("    ") + vc + check::to_string(c.result) + reset + ": " + c.reason + '\n';
    for (const auto& e : c.evidence)
      out += "      " + e.name + " = " + e.value + (e.target.empty() ? "" : "  (" + e.target + ")") + '\n';
  }
  for (const auto& k : r.key_names) out += "key names: " + k + '\n';
  for (const auto& n : r.notes) out += "note: " + n + '\n';
  std::size_t counts[3] = {0, 0, 0};
  for (const auto& c : r.checked) ++counts[static_cast<int>(c.result)];
  out += "assumed nginx " + r.lint.assumed.nginx.str() + " (" + r.lint.assumed.nginx_source + "), OpenSSL " +
         r.lint.assumed.openssl.str() + " (" + r.lint.assumed.openssl_source + ")\n";
  out += std::to_string(r.checked.size()) + " findings: " + std::to_string(counts[0]) + " confirmed, " +
         std::to_string(counts[1]) + " refuted, " + std::to_string(counts[2]) + " not testable\n";
  return out;
}

std::string render_check_json(const check_report& r) {
  auto doc = nlohmann::json::parse(render_json(r.lint));
  auto& findings = doc["findings"];
  for (std::size_t i = 0; i < r.checked.size() && i < findings.size(); ++i) {
    const auto& c = r.checked[i];
    nlohmann::json ev = nlohmann::json::array();
    for (const auto& e : c.evidence) ev.push_back({{"name", e.name}, {"value", e.value}, {"target", e.target}});
    findings[i]["verdict"] = check::to_string(c.result);
    findings[i]["verdict_reason"] = c.reason;
    findings[i]["probe_evidence"] = ev;
  }
  doc["probe"] = probe_json(r.probes);
  doc["key_names"] = r.key_names;
  doc["notes"] = r.notes;
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
}

}  // namespace ngxtls::report
