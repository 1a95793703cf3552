// quic-host-key-missing: QUIC sockets whose address validation and stateless reset tokens are
// sealed with a random key made at each load (no quic_host_key), or with keys that differ
// across the instances of a fleet.

#include <filesystem>
#include <map>
#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "quic-host-key-missing";

constexpr const char* doc = R"(# quic-host-key-missing

## What it flags
On nginx 1.25.0 or later, each QUIC socket (`listen ... quic`) whose default server (the one
marked `default_server`, else the first on the socket: its settings serve every QUIC
connection there, made before the SNI is known) has no `quic_host_key`: a note, a warning with
`--fleet`. With `--fleet`, a name served over QUIC by several configurations whose keys differ
(a random key, or key files at different paths): a warning naming the members. Key files at
the same path are taken as the same key (their contents are not compared).

## Why it matters
nginx seals QUIC address validation tokens (the `NEW_TOKEN` a client presents on its next
connection, the Retry token of `quic_retry on`) and stateless reset tokens with the host key.
Without `quic_host_key` it is random and made again at every start and reload: tokens issued
before a reload are refused after it (the client is validated again: with `quic_retry on`, one
more round trip), and a stateless reset sent for a connection of the old key does not match,
so a client whose connection was lost waits for its idle timeout. Behind one name, instances
with different keys refuse each other's tokens in the same way.

## Example
```nginx
server {
    listen 443 quic reuseport;
    listen 443 ssl;
    quic_retry on;
}
```

## Fix
```nginx
quic_host_key /etc/nginx/quic_host.key;  # the same file on every instance (openssl rand 32)
```

## How the prober confirms it
`ngxtls check --sandbox --reload` takes a NEW_TOKEN token and a session on each QUIC socket
before `nginx -s reload` and offers them 8 times after it; `--instances 2` offers one
instance's token 8 times from new UDP ports, so that both instances get it. Connections closed
with INVALID_TOKEN (nginx's "cannot decrypt token", measured on 1.26.3 and 1.30.6: 8 of 8 after
a reload, most of 8 across two instances) or answered with a Retry confirm it; offers taken
without one refute it (measured with `quic_host_key` set: 8 of 8 taken after a reload). nginx
sends NEW_TOKEN only with `quic_retry on`: without it there is no token to refuse and the
verdict is not testable (stateless reset tokens are not measured). One instance without
`--reload` shows no second key: not testable. tests/integration/test_quic_nginx.cpp "check
--sandbox judges quic_host_key across reloads and instances and 0-RTT".

## Source
nginx's ngx_http_v3_module documentation (`quic_host_key`: "Sets a file with the secret key
used to encrypt stateless reset and address validation tokens. By default, a random key is
generated on each reload. Tokens generated with old keys are not accepted."); nginx
src/event/quic/ngx_event_quic.c (the host key of the server that accepts the connection);
docs/nginx-facts.md#quic (tokens across a reload and two instances, measured with ngxtls's own
QUIC prober: the ngtcp2 example client of Debian 12, 0.12.1, writes NEW_TOKEN files it cannot
read back).
)";

/// The key domain of default server `d` of one member: its quic_host_key file, resolved, or a
/// random key of its own.
std::string key_domain(const engine::context& ctx, const model::server& d,
                       const std::string& member) {
  const auto* key = d.get("quic_host_key");
  if (!key || key->args().empty()) return "random key of " + member;
  return "key file " +
         std::filesystem::path(ctx.resolve(key->args().front())).lexically_normal().string();
}

const config::directive* quic_listen_of(const model::server& d, const model::listen_socket& k) {
  for (const auto& l : d.listens)
    if (l.quic && l.where && l.port == k.port && l.address == k.address) return l.where;
  return default_anchor(d);
}

/// Per member: each name served over QUIC -> its key domain.
std::vector<std::pair<std::string, std::map<std::string, std::string>>> fleet_domains(
    const engine::context& ctx) {
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> out;
  for (const auto& mem : ctx.options().fleet) {
    engine::context other(*mem.model, ctx.options());
    std::map<std::string, std::string> by_name;
    for (const auto& k : mem.model->sockets) {
      if (!k.quic || k.context != model::context_kind::http) continue;
      const std::string domain = key_domain(other, mem.model->servers[k.default_server], mem.label);
      for (std::size_t si : k.servers)
        for (const auto& n : mem.model->servers[si].names)
          if (!n.empty() && n != "_") by_name.emplace(n, domain);
    }
    out.emplace_back(mem.label, std::move(by_name));
  }
  return out;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (m.versions.nginx < model::version{1, 25, 0}) return;
  const bool fleet = ctx.options().fleet.size() > 1;
  std::set<std::size_t> told;  // default servers already named
  for (const auto& k : m.sockets) {
    if (!k.quic || k.context != model::context_kind::http) continue;
    const model::server& d = m.servers[k.default_server];
    if (d.get("quic_host_key") || !told.insert(k.default_server).second) continue;
    const bool retry = model::is_on(d.get("quic_retry"));
    auto f = ctx.make(
        id, fleet ? engine::severity::warning : engine::severity::note,
        "QUIC on " + k.name() +
            " seals address validation and stateless reset tokens with a random key made at "
            "each start and reload (no quic_host_key): tokens issued before a reload are refused "
            "after it" +
            (retry ? " (quic_retry on: one more round trip for every returning client)" : "") +
            (fleet ? ", and no other instance of the fleet accepts this one's tokens" : ""),
        quic_listen_of(d, k));
    f.facts.push_back(setting_evidence(ctx, d, "quic_host_key"));
    f.facts.push_back(setting_evidence(ctx, d, "quic_retry"));
    f.fix =
        "quic_host_key /etc/nginx/quic_host.key;  # openssl rand -out FILE 32; the same file "
        "on every instance";
    f.server = server_label(ctx, d);
    f.ports.push_back(k.port);
    out.push_back(std::move(f));
  }
  if (!fleet) return;
  std::string self;
  for (const auto& mem : ctx.options().fleet)
    if (mem.model == &m) self = mem.label;
  if (self.empty()) return;
  const auto domains = fleet_domains(ctx);
  for (const auto& k : m.sockets) {
    if (!k.quic || k.context != model::context_kind::http) continue;
    const model::server& d = m.servers[k.default_server];
    const auto* key = d.get("quic_host_key");
    if (!key || !key->where()) continue;  // the random key is told above
    std::set<std::string> names;
    for (std::size_t si : k.servers)
      for (const auto& n : m.servers[si].names)
        if (!n.empty() && n != "_") names.insert(n);
    for (const auto& name : names) {
      std::set<std::string> seen;
      std::string members;
      for (const auto& [label, by_name] : domains) {
        const auto it = by_name.find(name);
        if (it == by_name.end()) continue;
        seen.insert(it->second);
        members += (members.empty() ? "" : ", ") + label + " (" + it->second + ")";
      }
      if (seen.size() < 2) continue;
      auto f =
          ctx.make(id, engine::severity::warning,
                   "QUIC for " + name + " uses different host keys across the fleet: " + members +
                       ": an address validation or stateless reset token issued by one "
                       "instance is refused by the others",
                   key->where());
      f.facts.push_back(setting_evidence(ctx, d, "quic_host_key"));
      f.fix = "quic_host_key /etc/nginx/quic_host.key;  # the same file on every instance";
      f.server = server_label(ctx, d);
      f.ports.push_back(k.port);
      out.push_back(std::move(f));
      break;  // one finding per socket
    }
  }
}

}  // namespace

engine::rule quic_host_key_missing() {
  engine::rule r{id, engine::severity::note,
                 "QUIC tokens sealed with a random key per reload, or keys differing across a "
                 "fleet",
                 doc, check};
  r.confirmed_by = engine::probe_question::quic_tokens_kept;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
