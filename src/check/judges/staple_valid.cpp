// staple_valid: findings only the probe makes (an invalid OCSP staple).

#include <algorithm>
#include <string>
#include <vector>

#include "check/judges/judges.hpp"
#include "engine/file_facts.hpp"

namespace ngxtls::check {

using judges::config_port;
using judges::frac;
using judges::label;
using judges::name_matches;
using judges::port_of;

namespace {

// Whether the sandbox ran `s` with a stand-in: one of its certificates cannot be read here.
bool stand_in_certificate(const engine::context& ctx, const model::server& s) {
  const auto* certs = s.get("ssl_certificate");
  if (!certs) return false;
  for (const auto& occ : certs->values) {
    if (occ.args.empty()) continue;
    const auto& l = ctx.files().certificate(ctx.resolve(occ.args.front()));
    if (!l.facts || l.facts->empty()) return true;
  }
  return false;
}

}  // namespace

std::vector<checked_finding> probe_findings(const engine::context& ctx,
                                            const std::vector<probe::target_result>& results,
                                            const std::map<int, int>& port_map, bool sandboxed) {
  std::vector<checked_finding> out;
  // The rule that declares the staple's validity its question names these findings.
  const engine::rule* staple_rule = nullptr;
  for (const auto& r : engine::all_rules())
    if (!staple_rule && r.confirmed_by == engine::probe_question::staple_valid) staple_rule = &r;
  if (!staple_rule) return out;
  const std::string& rule = staple_rule->id;
  const auto& opts = ctx.options();
  if ((opts.select && !opts.select->count(rule)) || opts.ignore.count(rule)) return out;
  auto level = staple_rule->level;
  if (auto it = opts.severity_overrides.find(rule); it != opts.severity_overrides.end())
    level = it->second;
  const auto& m = ctx.model();
  for (const auto& r : results) {
    if (r.error || r.ocsp.status != probe::ocsp_status::invalid) continue;
    int port = port_of(r.address);
    if (auto it = port_map.find(port); it != port_map.end()) port = it->second;
    // The server that answered: by SNI among the servers on the port, else the default server.
    const model::server* server = nullptr;
    for (const auto& k : m.sockets) {
      if (!k.ssl || k.port != port) continue;
      for (std::size_t i : k.servers)
        for (const auto& n : m.servers[i].names)
          if (!server && name_matches(n, r.sni)) server = &m.servers[i];
      if (!server) server = &m.servers[k.default_server];
      break;
    }
    if (sandboxed && server && stand_in_certificate(ctx, *server)) continue;
    const config::directive* where = nullptr;
    if (server)
      for (const char* d : {"ssl_stapling_file", "ssl_stapling", "ssl_certificate"})
        if (const auto* st = server->get(d); st && st->where() && !where) where = st->where();
    const auto& o = r.ocsp;
    auto f = ctx.make(rule, level,
                      "the OCSP staple served for " + label(r) + " is not valid (" +
                          probe::staple_status_text(o) + "): " + o.staple_reason.value_or("") +
                          "; clients must reject it",
                      where);
    if (server) {
      f.server = server->names.empty() || server->names.front().empty() ? std::string()
                                                                        : server->names.front();
      for (const auto& l : server->listens) f.ports.push_back(l.port);
    }
    if (engine::suppressed_inline(m, f)) continue;
    if (server && server->get("ssl_stapling_file") && server->get("ssl_stapling_file")->where())
      f.facts.push_back({"ssl_stapling_file",
                         std::string(server->get("ssl_stapling_file")->first()), "server",
                         ctx.where(server->get("ssl_stapling_file")->where())});
    f.fix = o.staple_status == tls::staple_verdict::revoked
                ? "# the certificate is revoked: replace it"
                : "ssl_stapling on;\nssl_stapling_verify on;\n# drop an outdated "
                  "ssl_stapling_file, or refresh it before its nextUpdate";
    checked_finding c;
    c.finding = std::move(f);
    c.result = verdict::confirmed;
    c.reason = "the probe got " + frac(o.stapled - o.valid_staples, o.stapled) +
               " staples that are not valid: " + o.staple_reason.value_or("");
    c.evidence.push_back({"OCSP staple", probe::staple_status_text(o), label(r)});
    c.evidence.push_back({"valid OCSP staples", frac(o.valid_staples, o.stapled), label(r)});
    if (o.response_status) c.evidence.push_back({"responseStatus", *o.response_status, label(r)});
    if (o.cert_status) c.evidence.push_back({"certStatus", *o.cert_status, label(r)});
    if (o.revocation_reason)
      c.evidence.push_back({"revocation reason", *o.revocation_reason, label(r)});
    if (o.next_update_in_s)
      c.evidence.push_back({"nextUpdate in", std::to_string(*o.next_update_in_s) + " s", label(r)});
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ngxtls::check
