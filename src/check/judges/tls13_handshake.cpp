// The judge of probe question tls13_handshake.

#include <string>
#include <vector>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

namespace {

// The first-handshake runs, one per protocol asked for: was the protocol accepted?
std::map<std::string, bool> accepted(const std::vector<const probe::target_result*>& rs,
                                     std::vector<probe_fact>& evidence) {
  std::map<std::string, bool> out;
  for (const auto* r : rs)
    for (const auto& run : r->protocols) {
      if (run.mechanism != probe::resumption_mechanism::ticket || (run.error && run.supported))
        continue;  // failed for another reason
      if (out.count(probe::to_string(run.protocol))) continue;
      out[probe::to_string(run.protocol)] = run.supported;
      evidence.push_back({probe::to_string(run.protocol) + " handshake",
                          run.supported ? "accepted" : "refused", label(*r)});
    }
  return out;
}

}  // namespace

void tls13_handshake(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  auto acc = accepted(rs, c.evidence);
  auto it = acc.find("TLSv1.3");
  if (it == acc.end()) {
    // Not asked for (check --tls1.2), or the handshake failed for another reason.
    std::string failure;
    for (const auto* r : rs)
      for (const auto& run : r->protocols)
        if (failure.empty() && run.protocol == probe::tls_protocol::tls1_3 && run.error)
          failure = *run.error;
    c.reason = failure.empty() ? "no TLS 1.3 handshake was probed"
                               : "the TLS 1.3 handshake failed: " + failure;
  } else if (!it->second) {
    c.result = verdict::confirmed;
    c.reason = "the server refused a TLS 1.3 handshake";
  } else {
    c.result = verdict::refuted;
    c.reason = "the server completed a TLS 1.3 handshake";
  }
}

// docs/nginx-facts.md#default-server-rules: the protocol is negotiated with the default server's
// ssl_protocols; a probe with this server's SNI shows which list nginx used.
void protocols_per_name(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  std::string own;
  for (const auto& e : c.finding.facts)
    if (e.name == "ssl_protocols") own = e.value;
  auto acc = accepted(rs, c.evidence);
  if (own.empty() || acc.empty()) {
    c.reason = "no handshake with this server's name completed";
    return;
  }
  std::string differ;
  for (const auto& [proto, ok] : acc)
    if (ok != (own.find(proto) != std::string::npos))
      differ += (differ.empty() ? "" : ", ") + proto + (ok ? " accepted" : " refused");
  if (!differ.empty()) {
    c.result = verdict::confirmed;
    c.reason = differ + " under this name, against its own ssl_protocols (" + own + ")";
  } else {
    c.result = verdict::refuted;
    c.reason = "every protocol tried followed this server's own ssl_protocols (" + own + ")";
  }
}

}  // namespace ngxtls::check::judges
