#include "rules/common.hpp"

#include <algorithm>
#include <set>

#include "config/values.hpp"
#include "engine/fix.hpp"
#include "tls/ciphers.hpp"

namespace ngxtls::rules {

engine::evidence setting_evidence(const engine::context& ctx, const model::server& s,
                                  std::string_view name) {
  engine::evidence e;
  e.name = std::string(name);
  const model::setting* st = s.get(name);
  if (!st) {
    e.value = "(not set)";
    e.origin = "default";
    return e;
  }
  for (std::size_t i = 0; i < st->values.size(); ++i) {
    if (i) e.value += "; ";
    for (std::size_t j = 0; j < st->values[i].args.size(); ++j) {
      if (j) e.value += ' ';
      e.value += st->values[i].args[j];
    }
  }
  e.origin = model::to_string(st->from, s.context);
  if (const auto* d = st->where()) e.where = ctx.where(d);
  return e;
}

std::string server_label(const engine::context& ctx, const model::server& s) {
  return model::server_label(ctx.model(), s);
}

std::map<std::size_t, std::vector<const model::listen_socket*>> ssl_sockets_by_default(
    const model::model& m) {
  std::map<std::size_t, std::vector<const model::listen_socket*>> out;
  for (const auto& k : m.sockets)
    if (k.ssl) out[k.default_server].push_back(&k);
  return out;
}

bool issues_tickets(const model::model& m, std::size_t default_server,
                    const std::vector<const model::listen_socket*>& sockets) {
  auto completes_with_tickets = [&](std::size_t i) {
    const model::server& s = m.servers[i];
    return !model::is_on(s.get("ssl_reject_handshake")) &&
           model::is_on(s.get("ssl_session_tickets"));
  };
  if (completes_with_tickets(default_server)) return true;
  for (const auto* k : sockets)
    for (std::size_t i : k->servers)
      if (i != default_server && completes_with_tickets(i)) return true;
  return false;
}

std::vector<bool> servers_on_ticket_sockets(const model::model& m) {
  std::vector<bool> out(m.servers.size(), false);
  for (const auto& k : m.sockets)
    if (k.ssl && issues_tickets(m, k.default_server, {&k}))
      for (std::size_t i : k.servers) out[i] = true;
  return out;
}

std::string socket_names(const std::vector<const model::listen_socket*>& sockets) {
  std::string out;
  for (const auto* k : sockets) {
    if (!out.empty()) out += ", ";
    out += k->name();
  }
  return out;
}

bool tls13_enabled(const model::model& m, const model::server& s) {
  return m.versions.openssl >= model::version{1, 1, 1} &&
         model::protocols_enable(s.get("ssl_protocols"), "TLSv1.3");
}

const config::directive* default_anchor(const model::server& s) {
  if (const auto* l = s.first_ssl_listen()) return l;
  return s.where;
}

bool dynamic_path(std::string_view arg) {
  return arg.find('$') != std::string_view::npos || arg.rfind("data:", 0) == 0;
}

std::vector<sni_pair> name_based_servers(const model::model& m) {
  std::vector<sni_pair> out;
  for (const auto& k : m.sockets) {
    if (!k.ssl) continue;
    for (std::size_t si : k.servers)
      if (si != k.default_server) out.push_back({k.default_server, si, &k});
  }
  return out;
}

bool sni_selects_protocols(const model::version& v) {
  return v >= model::version{1, 29, 2};
}

bool protocols_from_default_servers(const model::model& m, std::size_t server) {
  if (sni_selects_protocols(m.versions.nginx)) return false;
  bool name_based = false;
  // The server's own sockets, not every socket: two rules ask this for every server.
  for (const std::uint32_t ki : m.servers[server].sockets) {
    const model::listen_socket& k = m.sockets[ki];
    if (!k.ssl) continue;
    if (k.default_server == server) return false;
    name_based = true;
  }
  return name_based;
}

bool same_value(const model::setting* a, const model::setting* b) {
  if (!a || !b) return !a && !b;
  if (a->values.size() != b->values.size()) return false;
  for (std::size_t i = 0; i < a->values.size(); ++i)
    if (a->values[i].args != b->values[i].args) return false;
  return true;
}

const config::directive* anchor_of(const model::server& s, std::string_view name) {
  if (const auto* st = s.get(name); st && st->where()) return st->where();
  return default_anchor(s);
}

bool closes_every_request(const model::server& s) {
  if (!s.where) return false;
  for (const auto& d : s.where->block) {
    const std::string_view n = d.name.view();
    if (n == "if" || n == "rewrite" || n == "break") return false;
    if (n == "return") return !d.args.empty() && d.args[0].value() == "444";
  }
  return false;
}

void walk(config::list<config::directive> block,
          const std::function<void(const config::directive&)>& visit) {
  for (const auto& d : block) {
    visit(d);
    if (d.has_block) walk(d.block, visit);
  }
}

namespace {
bool holds(const config::directive& d, const config::directive* target) {
  for (const auto& c : d.block)
    if (&c == target || (c.has_block && holds(c, target))) return true;
  return false;
}
}  // namespace

const config::directive* enclosing_block(const model::model& m, const model::server& s) {
  if (!m.cfg || !s.where) return nullptr;
  // A server of this model knows its block: rules ask for it per server, and a walk of the
  // whole tree each time was quadratic.
  if (!m.servers.empty() && &s >= m.servers.data() && &s < m.servers.data() + m.servers.size() &&
      s.block)
    return s.block->name == "http" || s.block->name == "stream" ? s.block : nullptr;
  const config::directive* found = nullptr;
  walk(m.cfg->root, [&](const config::directive& d) {
    if (!found && (d.name == "http" || d.name == "stream") && d.has_block && holds(d, s.where))
      found = &d;
  });
  return found;
}

bool openssl_differs(const model::model& m) {
  auto linked = model::version::parse(tls::openssl_version());
  return linked &&
         (linked->major != m.versions.openssl.major || linked->minor != m.versions.openssl.minor);
}

namespace {

std::vector<certificate_ref> certificates_uncached(const engine::context& ctx,
                                                   const model::server& s) {
  std::vector<certificate_ref> out;
  const auto* certs = s.get("ssl_certificate");
  if (!certs) return out;
  const auto* keys = s.get("ssl_certificate_key");
  for (std::size_t i = 0; i < certs->values.size(); ++i) {
    const auto& occ = certs->values[i];
    if (occ.args.empty() || dynamic_path(occ.args[0])) continue;
    certificate_ref r;
    r.arg = occ.args[0];
    r.path = ctx.resolve(r.arg);
    r.chain = read_chain(ctx, r.path);
    r.cert = &occ;
    if (keys && i < keys->values.size() && !keys->values[i].args.empty() &&
        !dynamic_path(keys->values[i].args[0])) {
      r.key = &keys->values[i];
      r.key_path = ctx.resolve(keys->values[i].args[0]);
      if (r.key_path.rfind("engine:", 0) == 0) {
        r.key = nullptr;
        r.key_path.clear();
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

const std::vector<certificate_ref>& certificates_of(const engine::context& ctx,
                                                    const model::server& s) {
  // Six rules ask for every server's certificates: work them out once per run.
  const auto& servers = ctx.model().servers;
  const auto& all =
      ctx.shared<std::vector<std::vector<certificate_ref>>>("rules::certificates_of", [&] {
        std::vector<std::vector<certificate_ref>> out;
        out.reserve(servers.size());
        for (const auto& x : servers) out.push_back(certificates_uncached(ctx, x));
        return out;
      });
  if (!servers.empty() && &s >= servers.data() && &s < servers.data() + servers.size())
    return all[static_cast<std::size_t>(&s - servers.data())];
  // A server of another model (a baseline): cached under its address.
  return ctx.shared<std::vector<certificate_ref>>(
      "rules::certificates_of@" + std::to_string(reinterpret_cast<std::uintptr_t>(&s)),
      [&] { return certificates_uncached(ctx, s); });
}

const std::vector<tls::certificate_info>* read_chain(const engine::context& ctx,
                                                     const std::string& path) {
  const auto& l = ctx.files().certificate(path);
  if (!l.facts || l.facts->empty()) return nullptr;
  return &*l.facts;
}

const config::directive* server_name_directive(const model::server& s) {
  if (!s.where) return nullptr;
  for (const auto& d : s.where->block)
    if (d.name == "server_name") return &d;
  return nullptr;
}

namespace {

// The zone of add_shared_cache_edit(): sharing one across unrelated servers lets sessions cross
// them, so the name is new.
std::string shared_cache_arg_uncached(const model::model& m, model::context_kind ctx) {
  std::set<std::string> used;
  for (const auto& s : m.servers)
    if (const auto* c = s.get("ssl_session_cache"))
      for (const auto& a : c->args())
        if (a.rfind("shared:", 0) == 0) used.emplace(a.substr(7, a.find(':', 7) - 7));
  // http and stream zones share one namespace: give each context its own name.
  const std::string base = ctx == model::context_kind::stream ? "SSL_STREAM" : "SSL";
  std::string name = base;
  for (int i = 2; used.count(name); ++i) name = base + std::to_string(i);
  return "shared:" + name + ":10m";
}

// Computed once per run and context (it scans every server, which per finding was quadratic on
// large fleets).
std::string shared_cache_arg(const engine::context& ctx, model::context_kind kind) {
  const std::string key =
      std::string("resumption:zone:") + (kind == model::context_kind::stream ? "stream" : "http");
  return ctx.shared<std::string>(key, [&] { return shared_cache_arg_uncached(ctx.model(), kind); });
}

}  // namespace

void add_shared_cache_edit(const engine::context& ctx, const model::server& d,
                           const config::directive* tickets_off, engine::finding& f) {
  const auto& cfg = *ctx.model().cfg;
  const std::string line = "ssl_session_cache " + shared_cache_arg(ctx, d.context) + ";";
  std::optional<engine::text_edit> e;
  if (const auto* cache = d.get("ssl_session_cache")->where())
    e = engine::replace_directive(cfg, *cache, line);
  else if (tickets_off)
    e = engine::insert_after(cfg, *tickets_off,
                             line + "  # ngxtls: resumption needs a cache when tickets are off");
  if (e) f.edits.push_back(*e);
}

}  // namespace ngxtls::rules
