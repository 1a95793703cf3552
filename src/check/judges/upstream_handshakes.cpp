// The judges of the upstream probe questions (upstream_connections, upstream_resumption,
// upstream_sni, upstream_verification): what nginx did through the finding's location to the
// sandbox's stand-in upstreams (judge_options::upstreams, check/upstreams.hpp).

#include <string>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

namespace {

// The measurement of the upstream whose *_pass directive the finding names (add_target_evidence
// of the upstream rules puts it among the facts), or null.
const upstream_measurement* measured_upstream(const checked_finding& c, const judge_options& o) {
  for (const auto& fact : c.finding.facts) {
    if (!fact.where || fact.name.size() < 5 || fact.name.compare(fact.name.size() - 5, 5, "_pass"))
      continue;
    for (const auto& m : o.upstreams)
      if (m.pass == *fact.where) return &m;
  }
  return nullptr;
}

void add_counts(checked_finding& c, const upstream_measurement& m, const upstream_counts& k,
                const std::string& variant) {
  const std::string target =
      m.server + (m.location.empty() ? "" : " " + m.location) + " (" + variant + ")";
  c.evidence.push_back(
      {"requests through nginx", frac(k.ok, k.requests) + " answered 2xx", target});
  c.evidence.push_back({"upstream TLS connections", std::to_string(k.connections), target});
  c.evidence.push_back({"full handshakes", std::to_string(k.full_handshakes), target});
  c.evidence.push_back({"resumed handshakes", std::to_string(k.resumed), target});
  std::string sni;
  for (const auto& n : k.sni) sni += (sni.empty() ? "" : ", ") + (n.empty() ? "(none)" : n);
  c.evidence.push_back({"SNI received", sni.empty() ? "(no handshake)" : sni, target});
}

// The measurement and its as-configured counts, or null with the reason set.
const upstream_measurement* usable(checked_finding& c, const judge_options& o) {
  const auto* m = measured_upstream(c, o);
  if (!m) {
    c.reason = o.upstreams.empty() && o.port_map.empty()
                   ? "only check --sandbox measures upstream connections (through stand-ins)"
                   : "the sandbox did not measure this upstream (see the notes)";
    return nullptr;
  }
  if (!m->as_configured.measured || m->as_configured.upstream_requests == 0) {
    c.reason = "no request reached the stand-in upstream: " + describe(*m, m->as_configured);
    add_counts(c, *m, m->as_configured, "as configured");
    return nullptr;
  }
  add_counts(c, *m, m->as_configured, "as configured");
  return m;
}

}  // namespace

void upstream_connections(checked_finding& c, const judge_options& o) {
  const auto* m = usable(c, o);
  if (!m) return;
  const auto& k = m->as_configured;
  if (k.connections >= k.upstream_requests && k.upstream_requests > 1) {
    c.result = verdict::confirmed;
    c.reason = describe(*m, k) + ": a TLS connection per request";
  } else {
    c.result = verdict::refuted;
    c.reason = describe(*m, k) + ": nginx kept its upstream connections";
  }
}

void upstream_resumption(checked_finding& c, const judge_options& o) {
  const auto* m = usable(c, o);
  if (!m) return;
  const auto& k = m->as_configured;
  if (k.resumed > 0) {
    c.result = verdict::refuted;
    c.reason = describe(*m, k) + ": nginx resumed its upstream sessions";
  } else if (k.full_handshakes > 1) {
    c.result = verdict::confirmed;
    c.reason = describe(*m, k) + ": every new upstream connection was a full handshake";
  } else {
    c.reason = describe(*m, k) +
               ": one kept connection made no second handshake that could have been resumed";
  }
}

void upstream_sni(checked_finding& c, const judge_options& o) {
  const auto* m = usable(c, o);
  if (!m) return;
  const auto& k = m->as_configured;
  const bool none = k.sni.size() == 1 && k.sni.front().empty();
  if (none) {
    c.result = verdict::confirmed;
    c.reason = describe(*m, k) + ": the stand-in received no server name";
  } else if (!k.sni.empty()) {
    c.result = verdict::refuted;
    c.reason = describe(*m, k) + ": nginx sent a server name";
  } else {
    c.reason = describe(*m, k) + ": no handshake completed";
  }
}

void upstream_verification(checked_finding& c, const judge_options& o) {
  const auto* m = measured_upstream(c, o);
  if (!m || !m->wrong_name.measured) {
    c.reason = m ? "the sandbox runs no wrong-name stand-in for a stream upstream"
                 : "the sandbox did not measure this upstream (see the notes)";
    return;
  }
  const auto& k = m->wrong_name;
  add_counts(c, *m, k, "certificate for another name");
  const std::string what = frac(k.ok, k.requests) + " requests through " +
                           (m->location.empty() ? "the stream server" : m->location) +
                           " to a stand-in whose certificate is for another name than " +
                           m->ssl_name;
  if (k.requests > 0 && k.ok == k.requests) {
    c.result = verdict::confirmed;
    c.reason = "nginx completed " + what;
  } else if (k.requests > 0 && k.bad_gateway == k.requests) {
    c.result = verdict::refuted;
    c.reason = "nginx answered 502 to " + std::to_string(k.bad_gateway) + " of " +
               std::to_string(k.requests) +
               " requests to a stand-in whose certificate is for another name";
  } else {
    c.reason = "nginx completed " + what + " (" + std::to_string(k.bad_gateway) + " were 502)";
  }
}

}  // namespace ngxtls::check::judges
