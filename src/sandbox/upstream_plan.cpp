// Phase 2c of sandbox::generate(): each TLS upstream of the linted config (model::tls_upstreams)
// pointed at stand-in TLS servers run by ngxtls on loopback, one per variant (as configured, a
// certificate for the wrong name, the keepalive fix), so that `check --sandbox` can count the
// upstream TLS handshakes nginx makes. Upstream host names are never resolved or contacted: the
// rendered config names only 127.0.0.1 ports.

#include <algorithm>
#include <filesystem>

#include "model/upstream.hpp"
#include "sandbox/sandbox_plan.hpp"

namespace ngxtls::sandbox {

namespace fs = std::filesystem;

std::string to_string(upstream_variant v) {
  switch (v) {
    case upstream_variant::as_configured:
      return "as configured";
    case upstream_variant::wrong_name:
      return "wrong name";
    case upstream_variant::fixed:
      return "fixed";
  }
  return "?";
}

const sandbox_upstream_route* sandbox_upstream::route(upstream_variant v) const {
  for (const auto& r : routes)
    if (r.variant == v) return &r;
  return nullptr;
}

namespace {

/// At most this many TLS upstreams are measured (three stand-ins each in http).
constexpr std::size_t k_max_measured_upstreams = 16;
/// The name on the wrong-name stand-in's certificate (.invalid never resolves: RFC 2606).
constexpr const char* k_wrong_name = "wrong-name.ngxtls.invalid";
/// keepalive of the fixed variant when the configured block keeps none.
constexpr int k_fix_keepalive = 16;

std::string variant_tag(upstream_variant v) {
  switch (v) {
    case upstream_variant::as_configured:
      return "configured";
    case upstream_variant::wrong_name:
      return "wrong-name";
    case upstream_variant::fixed:
      return "fixed";
  }
  return "x";
}

std::string line_of(const std::string& name, const std::vector<std::string>& args) {
  std::string l = name;
  for (const auto& a : args) l += " " + quote_token(a);
  return l + ";";
}

std::vector<std::string> args_of(const config::directive& d) {
  std::vector<std::string> out;
  for (const auto& a : d.args) out.emplace_back(a.value());
  return out;
}

// The name the stand-in's certificate is issued for: what nginx sends and verifies.
std::string certificate_name_of(const model::tls_upstream& u) {
  std::string n = u.ssl_name();
  if (n.empty() || n.find('$') != std::string::npos) n = u.host;
  if (n.empty() || n.find('$') != std::string::npos) n = "upstream.ngxtls.invalid";
  return n;
}

}  // namespace

std::vector<std::string> sandbox::upstream_location(const model::model& m, std::size_t ui,
                                                    upstream_variant v,
                                                    const upstream_standin& standin,
                                                    std::vector<std::string>& block_lines) {
  const auto& u = m.tls_upstreams[ui];
  const bool stream = u.context == model::context_kind::stream;
  const bool fixed = v == upstream_variant::fixed;
  const std::string label = model::server_label(m, m.servers[u.server]);
  std::string name = "ngxtls_upstream_" + std::to_string(ui) + "_" + variant_tag(v);
  std::replace(name.begin(), name.end(), '-', '_');
  std::vector<std::string> lines;
  bool client_certificate_ok = true;
  for (const auto& [suffix, setting] : u.settings) {
    if (setting.is_default()) continue;
    if (suffix == "ssl_name" || suffix == "ssl_trusted_certificate" || suffix == "http_version" ||
        suffix == "set_header" || suffix == "ssl" || (fixed && suffix == "ssl_session_reuse"))
      continue;
    const std::string directive = u.directive(suffix);
    if (suffix == "ssl_crl") {
      if (v == upstream_variant::as_configured)
        notes_.push_back(
            {label, directive + " left out: the stand-in's CA is not the one it lists"});
      continue;
    }
    for (const auto* occ : setting.occurrences) {
      auto args = args_of(*occ);
      const bool file = suffix == "ssl_certificate" || suffix == "ssl_certificate_key" ||
                        suffix == "ssl_password_file";
      if (file && !args.empty() && args[0].rfind("data:", 0) != 0) {
        const std::string real = resolve(m, args[0]);
        const std::string copy = readable_file(real) ? material_.file_for_nginx(real, args[0]) : "";
        if (copy.empty()) {
          if (v == upstream_variant::as_configured)
            notes_.push_back({label, directive + " " + args[0] +
                                         ": not readable here, left out (nginx presents no "
                                         "client certificate to the stand-in)"});
          if (suffix != "ssl_password_file") client_certificate_ok = false;
          continue;
        }
        args[0] = copy;
      }
      lines.push_back(line_of(directive, args));
    }
  }
  if (!client_certificate_ok)
    std::erase_if(lines, [&](const std::string& l) {
      return l.rfind(u.directive("ssl_certificate") + " ", 0) == 0 ||
             l.rfind(u.directive("ssl_certificate_key") + " ", 0) == 0;
    });
  // nginx sends and verifies the configured name, never the stand-in's address.
  if (const std::string n = u.ssl_name(); !n.empty())
    lines.push_back(line_of(u.directive("ssl_name"), {n}));
  if (const auto* verify = u.get("ssl_verify"); verify && verify->first() == "on")
    lines.push_back(
        line_of(u.directive("ssl_trusted_certificate"),
                {material_.file_for_nginx(standin.pki().root_cert, "the stand-in upstream's CA")}));
  if (fixed) lines.push_back(line_of(u.directive("ssl_session_reuse"), {"on"}));
  if (stream) {
    lines.push_back("proxy_ssl on;");
    lines.push_back(line_of("proxy_pass", {standin.address()}));
    return lines;
  }
  if (fixed) {
    lines.push_back(line_of("proxy_http_version", {"1.1"}));
    lines.push_back(line_of("proxy_set_header", {"Connection", ""}));
  } else {
    if (const auto* hv = u.get("http_version"); hv && !hv->is_default())
      lines.push_back(line_of("proxy_http_version", {std::string(hv->first())}));
    if (u.connection_where) {
      auto args = args_of(*u.connection_where);
      if (u.connection_variable) {
        // The map behind it is not in the sandbox: the measurement sends plain requests (no
        // Upgrade), so the value such a request gets stands in for it; `close` when the map
        // does not say.
        const std::string plain = u.connection_for_plain_requests.value_or("close");
        args = {args.empty() ? "Connection" : args[0], plain};
        if (v == upstream_variant::as_configured)
          notes_.push_back({label, "proxy_set_header Connection from a variable: measured as `" +
                                       plain + "` (what a request without Upgrade gets" +
                                       (u.connection_for_plain_requests ? "" : ": not known") +
                                       ")"});
      }
      lines.push_back(line_of("proxy_set_header", args));
    }
  }
  const auto* blk = u.block ? &m.upstreams[*u.block] : nullptr;
  if (fixed || blk) {
    block_lines.push_back("upstream " + name + " {");
    block_lines.push_back("    " + line_of("server", {standin.address()}));
    if (fixed)
      block_lines.push_back(
          "    " + line_of("keepalive", {std::to_string(blk && blk->keepalive && *blk->keepalive > 0
                                                            ? *blk->keepalive
                                                            : k_fix_keepalive)}));
    else if (blk->keepalive)
      block_lines.push_back("    " + line_of("keepalive", {std::to_string(*blk->keepalive)}));
    if (blk && blk->keepalive_requests)
      block_lines.push_back(
          "    " + line_of("keepalive_requests", {std::to_string(*blk->keepalive_requests)}));
    if (blk && blk->keepalive_timeout_ms)
      block_lines.push_back("    " + line_of("keepalive_timeout",
                                             {std::to_string(*blk->keepalive_timeout_ms) + "ms"}));
    if (blk && blk->zone_where) block_lines.push_back("    " + line_of("zone", {name, "64k"}));
    block_lines.push_back("}");
    lines.push_back(line_of("proxy_pass", {"https://" + name}));
  } else if (u.has_variables) {
    // A target nginx works out per request stays one: no upstream block keeps anything.
    lines.push_back(line_of("set", {"$" + name, standin.address()}));
    lines.push_back(line_of("proxy_pass", {"https://$" + name}));
  } else {
    lines.push_back(line_of("proxy_pass", {"https://" + standin.address()}));
  }
  std::vector<std::string> location{"location = /.ngxtls/upstream/" + std::to_string(ui) + "/" +
                                    variant_tag(v) + " {"};
  for (auto& l : lines) location.push_back("    " + l);
  location.push_back("}");
  return location;
}

void sandbox::plan_upstreams(const model::model& m, generation_plan& plan) {
  standins_.clear();
  std::set<std::size_t> served;
  for (const auto& p : plan.servers) served.insert(p.index);
  std::size_t measured = 0;
  for (std::size_t ui = 0; ui < m.tls_upstreams.size(); ++ui) {
    const auto& u = m.tls_upstreams[ui];
    if (!served.count(u.server)) continue;
    const std::string label = model::server_label(m, m.servers[u.server]);
    const std::string where = u.pass ? " at " + to_string(m.cfg->where(*u.pass)) : "";
    if (u.module != model::upstream_module::proxy) {
      notes_.push_back(
          {label, u.directive("pass") + where + ": not measured (" +
                      (u.module == model::upstream_module::grpc
                           ? "grpcs:// needs a backend that speaks HTTP/2; the stand-in speaks "
                             "HTTP/1.1"
                           : "suwsgi:// speaks uwsgi; the stand-in speaks HTTP/1.1") +
                      ")"});
      continue;
    }
    if (++measured > k_max_measured_upstreams) {
      notes_.push_back({label, "proxy_pass" + where + ": not measured (at most " +
                                   std::to_string(k_max_measured_upstreams) +
                                   " TLS upstreams are)"});
      continue;
    }
    const bool stream = u.context == model::context_kind::stream;
    std::vector<upstream_variant> variants{upstream_variant::as_configured};
    if (!stream)
      variants.insert(variants.end(), {upstream_variant::wrong_name, upstream_variant::fixed});
    for (auto v : variants) {
      standin_options so;
      so.certificate_name =
          v == upstream_variant::wrong_name ? k_wrong_name : certificate_name_of(u);
      so.pki_dir =
          (fs::path(run_dir_) / ("upstream-" + std::to_string(ui) + "-" + variant_tag(v))).string();
      standins_.push_back(std::make_unique<upstream_standin>(so, taken_));
      const auto& standin = *standins_.back();
      material_.show_address_as(standin.address(), "the stand-in for " + u.target);
      generation_plan::upstream_lines ul;
      ul.upstream = ui;
      ul.variant = v;
      ul.server = u.server;
      ul.standin = &standin;
      ul.location = upstream_location(m, ui, v, standin, ul.block);
      plan.upstream_plans.push_back(std::move(ul));
    }
  }
}

void sandbox::record_upstreams(const model::model& m, const generation_plan& plan) {
  upstreams_.clear();
  for (const auto& ul : plan.upstream_plans) {
    if (ul.dropped) continue;
    const auto p = std::find_if(plan.servers.begin(), plan.servers.end(),
                                [&](const server_plan& sp) { return sp.index == ul.server; });
    if (p == plan.servers.end() || p->dropped || p->sockets.empty()) continue;
    if (upstreams_.empty() || upstreams_.back().upstream != ul.upstream) {
      const auto& u = m.tls_upstreams[ul.upstream];
      const auto& s = m.servers[ul.server];
      sandbox_upstream su;
      su.upstream = ul.upstream;
      su.server = p->label;
      su.stream = u.context == model::context_kind::stream;
      if (u.location)
        for (const auto& a : u.location->args)
          su.location += (su.location.empty() ? "" : " ") + std::string(a.value());
      su.port = plan.port_of_socket.at(p->sockets.front());
      for (const auto& n : s.names)
        if (literal_name(n)) {
          su.sni = n;
          break;
        }
      su.ssl_name = certificate_name_of(u);
      upstreams_.push_back(std::move(su));
    }
    upstreams_.back().routes.push_back(
        {ul.variant,
         upstreams_.back().stream
             ? "/"
             : "/.ngxtls/upstream/" + std::to_string(ul.upstream) + "/" + variant_tag(ul.variant),
         ul.standin});
  }
}

}  // namespace ngxtls::sandbox
