// session-setting-ignored: ssl_session_cache / ssl_session_timeout / ssl_session_ticket_key
// set in a name-based server, where nginx takes them from the socket's default server.

#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "session-setting-ignored";

constexpr const char* doc = R"(# session-setting-ignored

## What it flags
`ssl_session_cache`, `ssl_session_timeout` or `ssl_session_ticket_key` set in a server that is
not the default server of a TLS listen socket, to a value that differs from what the socket's
default server has. Warning on every nginx version: 1.29.2 and later apply SNI before
resumption, yet still take these three from the default server (measured on 1.30.6).
`ssl_session_tickets` mismatches are reported by `tls13-resumption-disabled`.

## Why it matters
A TLS handshake starts in the socket's default server (the one marked `default_server`, else
the first server listening there). nginx switches to the server named by SNI for the
certificate and verification settings, but the session cache, the session lifetime and the
ticket keys stay those of the default server's SSL context. A cache, a longer timeout or a
shared ticket key file added to a name-based server has no effect: the rotation you planned,
or the fleet-wide key you deployed, is not in use for that name.

## Example
```nginx
server { listen 443 ssl default_server; server_name _; ssl_reject_handshake on; }
server {
    listen 443 ssl;
    server_name api.example.com;
    ssl_session_ticket_key /etc/nginx/keys/fleet.key;   # ignored: the default server's keys seal tickets
}
```

## Fix
Set session settings once in the `http` (or `stream`) block, so every server of the socket,
the default one included, has the same value; or move them into the default server.

## How the prober confirms it
`ngxtls probe --sni api.example.com` reports the ticket key names it sees: they are the
default server's (or per-instance random ones), not the key file's name.

## Source
docs/nginx-facts.md#default-server-rules (nginx 1.22.1: a ticket issued under SNI b is sealed with the default server's
key; a cache or key set only in a name-based server has no effect); nginx
src/http/ngx_http_ssl_module.c creates one SSL_CTX per server and
ngx_http_ssl_servername switches only the certificate context. Measured on Debian 12's
1.22.1, upstream 1.26.3 and Debian sid's 1.30.6 (OpenSSL 3.6) by
tests/integration/test_nginx_versions.cpp, "session cache and ticket key file and timeout
only in the name-based server are ignored": with `ssl_session_ticket_key`,
`ssl_session_timeout 60s` and a `shared:` cache only in server b, tickets at SNI b carry the
default server's key name and a 300 s lifetime on all three.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  std::set<std::pair<std::size_t, std::string>> seen;
  for (const auto& p : name_based_servers(m)) {
    const model::server& d = m.servers[p.default_server];
    const model::server& s = m.servers[p.name_based];
    for (const char* name :
         {"ssl_session_cache", "ssl_session_timeout", "ssl_session_ticket_key"}) {
      const auto* st = s.get(name);
      if (!st || st->from != model::origin::server) continue;
      if (same_value(st, d.get(name))) continue;
      if (!seen.insert({p.name_based, name}).second) continue;
      auto f = ctx.make(id, engine::severity::warning,
                        std::string(name) + " in " + server_label(ctx, s) + " has no effect on " +
                            p.socket->name() + ": nginx takes it from the default server " +
                            server_label(ctx, d) + " of that socket",
                        st->where());
      f.facts.push_back(setting_evidence(ctx, s, name));
      f.facts.push_back(setting_evidence(ctx, d, name));
      f.facts.back().name = std::string("default server ") + name;
      f.fix = "# in the http (stream) block, once for every server on the socket:\n" +
              std::string(name) + " ...;";
      f.server = server_label(ctx, s);
      out.push_back(std::move(f));
    }
  }
}

}  // namespace

engine::rule session_setting_ignored() {
  engine::rule r{
      id, engine::severity::warning,
      "Session cache, timeout or ticket key set in a name-based server, where nginx ignores it",
      doc, check};
  r.confirmed_by = engine::probe_question::settings_per_name;
  return r;
}

}  // namespace ngxtls::rules
