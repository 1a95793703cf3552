#include "rules/upstream_tls.hpp"

#include <deque>
#include <set>

namespace ngxtls::rules {

std::string upstream_place(const engine::context& ctx, const model::tls_upstream& u) {
  const auto& s = ctx.model().servers[u.server];
  if (u.context == model::context_kind::stream) return "stream server " + server_label(ctx, s);
  const config::directive* loc = u.location;
  std::string where = "location";
  if (loc)
    for (const auto& a : loc->args) where += " " + std::string(a.value());
  return where + " of " + server_label(ctx, s);
}

std::string backend_label(const engine::context& ctx, const model::tls_upstream& u) {
  if (u.block) {
    const auto& b = ctx.model().upstreams[*u.block];
    std::string servers;
    for (std::size_t i = 0; i < b.servers.size() && i < 3; ++i)
      servers += (i ? ", " : "") + b.servers[i];
    if (b.servers.size() > 3) servers += ", ...";
    return "upstream `" + b.name + "`" + (servers.empty() ? "" : " (" + servers + ")");
  }
  if (u.reach == model::backend_reach::unix_socket) return "a unix socket";
  if (u.host.empty()) return "`" + u.target + "`";
  const bool v6 = u.host.find(':') != std::string::npos;
  const std::string host = v6 ? "[" + u.host + "]" : u.host;
  return u.port ? host + ":" + std::to_string(u.port) : host;
}

engine::evidence upstream_evidence(const engine::context& ctx, const model::tls_upstream& u,
                                   std::string_view suffix) {
  engine::evidence e;
  e.name = u.directive(suffix);
  const auto* s = u.get(suffix);
  if (!s || s->args.empty()) {
    e.value = "(not set)";
    e.origin = s && !s->is_default() ? std::string(s->level->name) : "default";
    return e;
  }
  for (const auto a : s->args) e.value += (e.value.empty() ? "" : " ") + std::string(a);
  e.origin = s->is_default() ? "default" : std::string(s->level->name);
  if (s->where()) e.where = ctx.where(s->where());
  return e;
}

void add_target_evidence(const engine::context& ctx, const model::tls_upstream& u,
                         engine::finding& f) {
  f.facts.push_back({std::string(u.pass->name), u.target,
                     u.context == model::context_kind::stream ? "server" : "location",
                     ctx.where(u.pass)});
  if (u.block)
    f.facts.push_back({"upstream", ctx.model().upstreams[*u.block].name, "http",
                       ctx.where(ctx.model().upstreams[*u.block].where)});
  f.facts.push_back({"backend reach", model::to_string(u.reach), "config", std::nullopt});
  f.server = server_label(ctx, ctx.model().servers[u.server]);
}

namespace {

struct upstream_certificate_set {
  std::deque<model::occurrence> occurrences;  ///< stable addresses for certificate_ref
  std::vector<upstream_certificate> certs;
};

}  // namespace

const std::vector<upstream_certificate>& upstream_certificates(const engine::context& ctx) {
  return ctx
      .shared<upstream_certificate_set>(
          "rules::upstream_certificates",
          [&] {
            upstream_certificate_set out;
            std::set<const config::directive*> seen;
            for (const auto& u : ctx.model().tls_upstreams) {
              const auto* cert = u.get("ssl_certificate");
              if (!cert || cert->is_default() || cert->args.empty() ||
                  !seen.insert(cert->where()).second || dynamic_path(cert->args.front()))
                continue;
              upstream_certificate c;
              c.directive = u.directive("ssl_certificate");
              c.key_directive = u.directive("ssl_certificate_key");
              c.place = upstream_place(ctx, u);
              const auto* password = u.get("ssl_password_file");
              c.password_file = password && !password->is_default();
              out.occurrences.push_back({model::values_view(cert->where()->args), cert->where()});
              c.ref.cert = &out.occurrences.back();
              c.ref.arg = cert->args.front();
              c.ref.path = ctx.resolve(c.ref.arg);
              c.ref.chain = read_chain(ctx, c.ref.path);
              const auto* key = u.get("ssl_certificate_key");
              if (key && !key->is_default() && !key->args.empty() &&
                  !dynamic_path(key->args.front())) {
                out.occurrences.push_back({model::values_view(key->where()->args), key->where()});
                c.ref.key = &out.occurrences.back();
                c.ref.key_path = ctx.resolve(key->args.front());
                if (c.ref.key_path.rfind("engine:", 0) == 0) {
                  c.ref.key = nullptr;
                  c.ref.key_path.clear();
                }
              }
              out.certs.push_back(std::move(c));
            }
            return out;
          })
      .certs;
}

}  // namespace ngxtls::rules
