// ticket-keys-not-shared: session tickets sealed with keys that no other instance holds
// and that a reload throws away.

#include <optional>
#include <set>
#include <unordered_map>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "ticket-keys-not-shared";

constexpr const char* doc = R"(# ticket-keys-not-shared

## What it flags
A listen socket whose default server has session tickets on and no `ssl_session_ticket_key`.
- On nginx < 1.23.2, or without a `shared:` session cache, the keys are OpenSSL's per-context
  keys, made at every configuration load. A note on one host (no `--fleet`): each reload costs
  every returning client one full handshake, and nothing else is lost. A warning where there is
  evidence of several instances: a `--fleet` of configs. `reuseport` alone is not (one master's
  workers share the keys); the note then says that several masters could bind the port, which
  `check --sandbox --instances 2` measures.
- Note on nginx >= 1.23.2 with a `shared:` cache: nginx keeps auto-rotated keys in the shared
  zone, so they survive reloads, but they stay on this host. The zone's key is replaced every
  `ssl_session_timeout` (older keys still decrypt for a while), so one instance can show two
  key names across a rotation without a second key domain.
- Still a warning there when the socket has `reuseport`: several nginx instances (masters) can
  bind that port, and each has its own zone and keys (two key names, about half the
  resumptions, with or without a shared cache).
- Error when several configs are linted as one fleet (`--fleet A.conf B.conf`, or `[fleet]`
  in `.ngxtls.toml`) and they serve a common `server_name` with different or missing key files
  (compared by a fingerprint of the encrypting key file, never printed): the message gives
  the expected resumption rate, about 1/N for N key domains.

A socket that issues no tickets has no keys to share and is never reported: every server
that completes handshakes there has `ssl_session_tickets off` (a default server with
`ssl_reject_handshake on` completes none; nginx's SNI callback applies the chosen server's
ticket setting).

`reuseport` alone never raises it: one master's workers share every key; it is the second
master on the port that splits them.

## Why it matters
A ticket resumes only where its key is. Without a shared key file every reload or restart
throws away every outstanding ticket (a new key name each time), and each instance behind a
load balancer (hosts, pods, two masters on one port) seals tickets that the others cannot
open: clients land on a random instance and resume about 1/N of the time.

## Example
```nginx
server {
    listen 443 ssl reuseport;
    ssl_certificate     site.pem;
    ssl_certificate_key site.key;
    # no ssl_session_ticket_key: keys differ per instance and per reload
}
```

## Fix
Generate key files once and deploy the same files to every instance:
```nginx
# umask 077; openssl rand 80 > /etc/nginx/tickets/current.key
ssl_session_ticket_key /etc/nginx/tickets/current.key;
ssl_session_ticket_key /etc/nginx/tickets/previous.key;
```
Rotate them as `ticket-key-rotation` describes.

## How the prober confirms it
`ngxtls probe` against the name (or `--connect` to each backend) reports the ticket key names
it sees; two names and a partial rate mean two key domains. `ngxtls check --sandbox
--instances 2` starts two masters on one port and shows it before deploy; `--reload` shows
a saved ticket failing after a reload.

## Source
docs/nginx-facts.md#workers-share-ticket-keys and docs/nginx-facts.md#ticket-keys-per-instance (nginx 1.22.1: 0/10 after a reload and across two masters without a
key file; 10/10 with one shared key file; 40/40 for 4 workers with reuseport). nginx 1.23.2
CHANGES: "ticket keys are now stored in shared memory" with `ssl_session_cache shared:`.
Measured on Debian 12's 1.22.1, upstream 1.26.3 and Debian sid's 1.30.6 by
tests/integration/test_nginx_versions.cpp (`ngxtls probe -n 20`, TLS 1.3):
- "no ticket key file and no cache": a saved session resumes 0/20 after `nginx -s reload`,
  with a new key name, on all three;
- "shared session cache and no key file": 0/20 on 1.22.1; 20/20 with the key name kept on
  1.26.3 and 1.30.6;
- "the zone's ticket key changes every ssl_session_timeout": with a 2 s timeout the key name
  changes within 3.5 s on 1.26.3 and 1.30.6, not on 1.22.1;
- "two nginx masters on one port with reuseport", with and without a shared cache: two key
  names and 8 to 12 of 20 resumed on all three.
)";

constexpr const char* key_fix =
    "# umask 077; openssl rand 80 > /etc/nginx/tickets/current.key  (same file on every instance)\n"
    "ssl_session_ticket_key /etc/nginx/tickets/current.key;";

// What seals tickets for one default server: the first key file (only it encrypts,
// docs/nginx-facts.md#ticket-key-rotation), identified by content fingerprint where readable, else
// by path; or per-instance auto keys.
std::string key_domain(const engine::context& ctx, const model::server& d,
                       const std::string& member) {
  const auto* keys = d.get("ssl_session_ticket_key");
  if (!keys || keys->values.empty() || keys->values.front().args.empty())
    return "auto keys of " + member;
  const std::string path = ctx.resolve(keys->values.front().args.front());
  const auto& l = ctx.files().ticket_key(path);
  if (l.facts) return "key file fingerprint " + l.facts->fingerprint;
  return "key file " + path;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  const bool shared_zone_keys = m.versions.nginx >= model::version{1, 23, 2};
  for (const auto& [di, all_sockets] : ssl_sockets_by_default(m)) {
    const model::server& d = m.servers[di];
    if (!model::is_on(d.get("ssl_session_tickets"))) continue;
    if (d.get("ssl_session_ticket_key")) continue;
    std::vector<const model::listen_socket*> sockets;  // those that issue tickets
    for (const auto* k : all_sockets)
      if (issues_tickets(m, di, {k})) sockets.push_back(k);
    if (sockets.empty()) continue;
    const bool shared =
        model::cache_kind(d.get("ssl_session_cache")) == model::session_cache_kind::shared;
    bool reuseport = false;
    for (const auto* k : sockets) reuseport = reuseport || k->reuseport;
    const std::string where_sockets = socket_names(sockets);
    engine::finding f;
    if (shared_zone_keys && shared && !reuseport) {
      f = ctx.make(id, engine::severity::note,
                   "session tickets on " + where_sockets +
                       " are sealed with keys nginx rotates in the shared cache zone: they survive "
                       "reloads but no other host can open them",
                   default_anchor(d));
    } else {
      if (shared_zone_keys && shared) {
        // The zone keeps keys across reloads, but each master has its own zone.
        f = ctx.make(
            id, engine::severity::warning,
            "session tickets on " + where_sockets +
                " are sealed with keys nginx rotates in this instance's shared cache zone: "
                "with `reuseport`, several nginx instances can bind this port, each with its "
                "own zone and keys, and a client resumes only on the instance that sealed "
                "its ticket (about half with two)",
            default_anchor(d));
      } else {
        std::string why = m.versions.nginx < model::version{1, 23, 2}
                              ? "nginx " + m.versions.nginx.str() +
                                    " < 1.23.2 keeps no ticket keys in shared memory"
                              : std::string("there is no `shared:` session cache to keep them in");
        // Only a fleet is evidence of a second instance (reuseport alone is not: one master's
        // workers share the keys, docs/nginx-facts.md#workers-share-ticket-keys; check --sandbox
        // --instances measures two masters): otherwise what a reload costs is all there is.
        const bool several = ctx.options().fleet.size() > 1;
        f = several
                ? ctx.make(id, engine::severity::warning,
                           "session tickets on " + where_sockets +
                               " are sealed with keys made at each configuration load (" + why +
                               "): every reload or restart throws away every outstanding ticket, "
                               "and another instance serving this name cannot open them" +
                               (reuseport ? " (with `reuseport`, several nginx instances can bind "
                                            "this port, each with its own keys)"
                                          : ""),
                           default_anchor(d))
                : ctx.make(id, engine::severity::note,
                           "session tickets on " + where_sockets +
                               " are sealed with keys made at each configuration load (" + why +
                               "): a reload or restart throws away every outstanding ticket, so "
                               "each returning client makes one full handshake after it; on one "
                               "host that is the whole cost (instances behind one name would "
                               "need shared key files" +
                               (reuseport ? std::string("; with `reuseport`, several nginx "
                                                        "masters can bind this port, each with "
                                                        "its own keys)")
                                          : std::string(")")),
                           default_anchor(d));
      }
    }
    for (const char* n : {"ssl_session_tickets", "ssl_session_ticket_key", "ssl_session_cache"})
      f.facts.push_back(setting_evidence(ctx, d, n));
    f.facts.push_back(
        {"nginx version", m.versions.nginx.str(), m.versions.nginx_source, std::nullopt});
    f.fix = key_fix;
    f.server = server_label(ctx, d);
    for (const auto* k : sockets) f.ports.push_back(k->port);
    out.push_back(std::move(f));
  }

  // Fleet: every config serving a name must seal with the same key.
  const auto& fleet = ctx.options().fleet;
  if (fleet.size() < 2) return;
  std::string self_label;
  for (const auto& mem : fleet)
    if (mem.model == &m) self_label = mem.label;
  if (self_label.empty()) return;
  // Per member, each name it serves -> the key domain of the first socket group (in default
  // server order) that serves it and issues tickets: one pass over each member's servers.
  struct member_domains {
    std::string label;
    std::unordered_map<std::string, std::string> by_name;
  };
  std::vector<member_domains> members_domains;
  for (const auto& mem : fleet) {
    member_domains md{mem.label, {}};
    engine::context other(*mem.model, ctx.options());
    for (const auto& [odi, osockets] : ssl_sockets_by_default(*mem.model)) {
      const model::server& od = mem.model->servers[odi];
      if (!model::is_on(od.get("ssl_session_tickets")) ||
          !issues_tickets(*mem.model, odi, osockets))
        continue;
      std::optional<std::string> domain;  // made once per group, when a name needs it
      for (const auto* k : osockets)
        for (std::size_t si : k->servers)
          for (const auto& n : mem.model->servers[si].names) {
            if (md.by_name.count(n)) continue;
            if (!domain) domain = key_domain(other, od, mem.label);
            md.by_name.emplace(n, *domain);
          }
    }
    members_domains.push_back(std::move(md));
  }
  for (const auto& [di, sockets] : ssl_sockets_by_default(m)) {
    // Names this socket group serves.
    std::set<std::string> names;
    for (const auto* k : sockets)
      for (std::size_t si : k->servers)
        for (const auto& n : m.servers[si].names)
          if (!n.empty() && n != "_") names.insert(n);
    const model::server& d = m.servers[di];
    if (!model::is_on(d.get("ssl_session_tickets")) || !issues_tickets(m, di, sockets)) continue;
    for (const auto& name : names) {
      std::set<std::string> domains;
      std::vector<std::string> members;
      for (const auto& md : members_domains) {
        const auto it = md.by_name.find(name);
        if (it == md.by_name.end()) continue;
        domains.insert(it->second);
        members.push_back(md.label);
      }
      if (domains.size() < 2) continue;
      std::string list;
      for (const auto& mm : members) list += (list.empty() ? "" : ", ") + mm;
      const auto* keys = d.get("ssl_session_ticket_key");
      auto f =
          ctx.make(id, engine::severity::error,
                   std::to_string(domains.size()) + " different ticket keys seal tickets for " +
                       name + " across the fleet (" + list +
                       "): a client resumes only on an instance that holds its ticket's key; "
                       "expect about 1/" +
                       std::to_string(domains.size()) + " resumption",
                   keys && keys->where() ? keys->where() : default_anchor(d));
      f.facts.push_back(setting_evidence(ctx, d, "ssl_session_ticket_key"));
      f.facts.push_back({"key domains", std::to_string(domains.size()), "fleet", std::nullopt});
      f.fix = "# deploy the same key files (same bytes, same order) to every instance:\n" +
              std::string(key_fix);
      f.server = name;
      out.push_back(std::move(f));
    }
  }
}

}  // namespace

engine::rule ticket_keys_not_shared() {
  engine::rule r{id, engine::severity::warning,
                 "Session tickets sealed with per-instance keys that a reload throws away", doc,
                 check};
  r.confirmed_by = engine::probe_question::key_domains;
  r.costs_resumption = true;
  return r;
}

}  // namespace ngxtls::rules
