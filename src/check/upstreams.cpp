#include "check/upstreams.hpp"

#include <algorithm>

#include "sandbox/upstream_drive.hpp"

namespace ngxtls::check {

std::string describe(const upstream_measurement& m, const upstream_counts& c) {
  std::string sni;
  for (const auto& n : c.sni)
    if (!n.empty()) sni += (sni.empty() ? "SNI " : ", ") + n;
  if (sni.empty())
    sni = c.sni.empty() ? "no handshake completed" : "no SNI";
  else if (std::find(c.sni.begin(), c.sni.end(), "") != c.sni.end())
    sni += " and none";
  return std::to_string(c.requests) + " requests through " +
         (m.location.empty() ? "the stream server " + m.server : m.location) + " opened " +
         std::to_string(c.connections) + " upstream TLS connection" +
         (c.connections == 1 ? "" : "s") + ": " + std::to_string(c.full_handshakes) +
         " full handshake" + (c.full_handshakes == 1 ? "" : "s") + ", " +
         std::to_string(c.resumed) + " resumed, " + sni;
}

namespace {

upstream_counts counts_of(const sandbox::drive_result& d, const sandbox::standin_counts& k) {
  upstream_counts c;
  c.measured = true;
  c.requests = d.sent;
  c.ok = d.ok;
  c.bad_gateway = d.bad_gateway;
  c.failed = d.failed + d.other_status;
  c.connections = k.connections;
  c.full_handshakes = k.full_handshakes;
  c.resumed = k.resumed;
  c.upstream_requests = k.requests;
  c.client_certificates = k.client_certificates;
  c.sni.assign(k.sni.begin(), k.sni.end());
  c.protocols.assign(k.protocols.begin(), k.protocols.end());
  return c;
}

}  // namespace

std::vector<upstream_measurement> measure_upstreams(const sandbox::sandbox& sb,
                                                    const model::model& m) {
  std::vector<upstream_measurement> out;
  for (const auto& u : sb.upstreams()) {
    upstream_measurement um;
    const auto& tu = m.tls_upstreams.at(u.upstream);
    if (tu.pass) um.pass = m.cfg->where(*tu.pass);
    um.server = u.server;
    um.location = u.location;
    um.ssl_name = u.ssl_name;
    for (const auto& r : u.routes) {
      sandbox::drive_options o;
      o.requests = k_upstream_requests;
      o.connections = k_upstream_client_connections;
      const auto d = sandbox::drive_requests(u.port, u.sni, u.sni, r.path, o);
      const auto c = counts_of(d, sandbox::count(r.standin->connections()));
      switch (r.variant) {
        case sandbox::upstream_variant::as_configured:
          um.as_configured = c;
          break;
        case sandbox::upstream_variant::wrong_name:
          um.wrong_name = c;
          break;
        case sandbox::upstream_variant::fixed:
          um.fixed = c;
          break;
      }
    }
    out.push_back(std::move(um));
  }
  return out;
}

void price_upstreams(const sandbox::sandbox& sb, std::vector<upstream_measurement>& measured,
                     int duration_ms, int connections, const std::atomic<bool>* stop) {
  const auto& ups = sb.upstreams();
  for (std::size_t i = 0; i < ups.size() && i < measured.size(); ++i) {
    const auto* conf = ups[i].route(sandbox::upstream_variant::as_configured);
    const auto* fix = ups[i].route(sandbox::upstream_variant::fixed);
    if (!conf || !fix || (stop && stop->load())) continue;
    sandbox::drive_options o;
    o.requests = 0;
    o.duration_ms = duration_ms;
    o.connections = connections;
    o.one_at_a_time = false;
    upstream_price p;
    p.connections = connections;
    p.duration_ms = duration_ms;
    // One route under load: its requests per second, and the upstream connections and full
    // handshakes it cost.
    auto load = [&](const sandbox::sandbox_upstream_route& route, double& rps, int& opened,
                    int& full) {
      const auto before = sandbox::count(route.standin->connections());
      rps = sandbox::drive_requests(ups[i].port, ups[i].sni, ups[i].sni, route.path, o)
                .requests_per_second();
      const auto after = sandbox::count(route.standin->connections());
      opened = after.connections - before.connections;
      full = after.full_handshakes - before.full_handshakes;
    };
    load(*conf, p.configured_rps, p.configured_upstream_connections, p.configured_full_handshakes);
    if (stop && stop->load()) continue;
    load(*fix, p.fixed_rps, p.fixed_upstream_connections, p.fixed_full_handshakes);
    measured[i].price = p;
  }
}

}  // namespace ngxtls::check
