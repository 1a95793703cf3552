#include "rules/common.hpp"

namespace ngxtls::rules {

engine::evidence setting_evidence(const engine::context& ctx, const model::server& s,
                                  const std::string& name) {
  engine::evidence e;
  e.name = name;
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
  e.origin = model::to_string(st->from, s.context == model::context_kind::stream);
  if (const auto* d = st->where()) e.where = ctx.where(d);
  return e;
}

std::string server_label(const engine::context& ctx, const model::server& s) {
  for (const auto& n : s.names)
    if (!n.empty()) return n;
  auto w = ctx.where(s.where);
  return "server at " + w.file + ":" + std::to_string(w.line);
}

std::map<std::size_t, std::vector<const model::listen_socket*>> ssl_sockets_by_default(
    const model::model& m) {
  std::map<std::size_t, std::vector<const model::listen_socket*>> out;
  for (const auto& k : m.sockets)
    if (k.ssl) out[k.default_server].push_back(&k);
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

bool dynamic_path(const std::string& arg) {
  return arg.find('$') != std::string::npos || arg.rfind("data:", 0) == 0;
}

}  // namespace ngxtls::rules
