// protocols-ignored-per-sni: ssl_protocols in a name-based server, which nginx before 1.29.2
// does not apply (the protocol is chosen in the default server's context).

#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "protocols-ignored-per-sni";

constexpr const char* doc = R"(# protocols-ignored-per-sni

## What it flags
`ssl_protocols` set in a server that is not the default server of its TLS listen socket, to a
value that differs from the default server's, on nginx before 1.29.2. Warning.

## Why it matters
OpenSSL picks the protocol version before nginx's SNI callback switches to the name-based
server, so the default server's `ssl_protocols` decide for every name on the socket. A server
set to `TLSv1.3` alone still completes TLS 1.2 handshakes (measured), and one that tries to
re-enable an old protocol for legacy clients does not get it either.

## Example
```nginx
server { listen 443 ssl default_server; ssl_protocols TLSv1.2 TLSv1.3; ... }
server { listen 443 ssl; server_name strict.example.com; ssl_protocols TLSv1.3; ... }  # ignored
```

## Fix
Set `ssl_protocols` once in the `http` block, or give servers that need different protocols
their own listen socket (address or port) where they are the default server; or run nginx
1.29.2 or later.

## How the prober confirms it
`ngxtls probe --tls1.2 --sni strict.example.com` completes a TLS 1.2 handshake.

## Source
docs/nginx-facts.md#default-server-rules (nginx 1.22.1: a TLS 1.2 handshake succeeds to a name-based server set to
TLSv1.3 only); nginx CHANGES 1.29.2 (SNI is applied before protocol selection). Measured on
Debian 12's 1.22.1, upstream 1.26.3 and Debian sid's 1.30.6 by
tests/integration/test_nginx_versions.cpp, "ssl_protocols only in the name-based server is
honoured from 1.29.2": with `ssl_protocols TLSv1.2` only in server b, TLS 1.3 at SNI b still
succeeds on 1.22.1 and 1.26.3 and is refused on 1.30.6.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (sni_selects_protocols(m.versions.nginx)) return;
  std::set<std::size_t> seen;
  for (const auto& p : name_based_servers(m)) {
    const model::server& d = m.servers[p.default_server];
    const model::server& s = m.servers[p.name_based];
    const auto* st = s.get("ssl_protocols");
    if (!st || st->from != model::origin::server || same_value(st, d.get("ssl_protocols")))
      continue;
    if (!seen.insert(p.name_based).second) continue;
    auto f =
        ctx.make(id, engine::severity::warning,
                 "ssl_protocols in " + server_label(ctx, s) + " is ignored on " + p.socket->name() +
                     ": nginx " + m.versions.nginx.str() +
                     " negotiates the protocol with the default server " + server_label(ctx, d) +
                     "'s ssl_protocols (" + setting_evidence(ctx, d, "ssl_protocols").value + ")",
                 st->where());
    f.facts.push_back(setting_evidence(ctx, s, "ssl_protocols"));
    f.facts.push_back(setting_evidence(ctx, d, "ssl_protocols"));
    f.facts.back().name = "default server ssl_protocols";
    f.fix = "# in the http block, for every server:\nssl_protocols TLSv1.2 TLSv1.3;";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule protocols_ignored_per_sni() {
  engine::rule r{id, engine::severity::warning,
                 "ssl_protocols in a name-based server is ignored before nginx 1.29.2", doc, check};
  r.confirmed_by = engine::probe_question::protocols_per_name;
  return r;
}

}  // namespace ngxtls::rules
