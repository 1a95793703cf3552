// quic-without-tls13: a QUIC server whose ssl_protocols lack TLSv1.3, which nginx refuses.

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "quic-without-tls13";

constexpr const char* doc = R"(# quic-without-tls13

## What it flags
An http server with a `listen ... quic` whose effective `ssl_protocols` (its own, inherited from
`http`, or nginx's default) does not enable TLSv1.3, on nginx 1.25.0 or later (before, the
`quic` parameter itself is refused: `directive-arguments`). Error, at `ssl_protocols` (at the
first `listen ... quic` when the default applies).

## Why it matters
QUIC carries TLS 1.3 only (RFC 9001). nginx refuses such a configuration: `nginx -t` fails with
`"ssl_protocols" must enable TLSv1.3 for the "listen ... quic" directive`, reported at the
`server` line, and nginx does not start or reload (docs/nginx-facts.md#quic, measured on
1.26.3 and 1.30.6). A template that drops TLS 1.3 for a legacy client breaks every server of
the config that also serves HTTP/3.

## Example
```nginx
server {
    listen 443 ssl;
    listen 443 quic;
    ssl_protocols TLSv1.2;
}
```

## Fix
```nginx
ssl_protocols TLSv1.2 TLSv1.3;
```

## How the prober confirms it
`check --sandbox` runs `nginx -t` on the configuration, which fails with nginx's message.

## Source
docs/nginx-facts.md#quic (nginx's message, measured on 1.26.3 and 1.30.6 by
tests/integration/test_quic_nginx.cpp); RFC 9001 section 4.2 (QUIC uses TLS 1.3 or later).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (m.versions.nginx < model::version{1, 25, 0}) return;
  for (const auto& s : m.servers) {
    if (s.context != model::context_kind::http) continue;
    const auto quic = model::quic_sockets_of(m, s);
    if (quic.empty()) continue;
    const auto* protocols = s.get("ssl_protocols");
    if (model::protocols_enable(protocols, "TLSv1.3")) continue;
    const config::directive* at = protocols ? protocols->where() : nullptr;
    if (!at)
      for (const auto& l : s.listens)
        if (l.quic && l.where && !at) at = l.where;
    auto f = ctx.make(id, engine::severity::error,
                      "nginx refuses this configuration: \"ssl_protocols\" must enable TLSv1.3 for "
                      "the \"listen ... quic\" directive (QUIC is TLS 1.3 only; " +
                          server_label(ctx, s) + " listens on QUIC at " + socket_names(quic) + ")",
                      at ? at : default_anchor(s));
    f.facts.push_back(setting_evidence(ctx, s, "ssl_protocols"));
    f.fix = "ssl_protocols TLSv1.2 TLSv1.3;";
    f.server = server_label(ctx, s);
    for (const auto* k : quic) f.ports.push_back(k->port);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule quic_without_tls13() {
  engine::rule r{id, engine::severity::error, "QUIC server whose ssl_protocols lack TLSv1.3", doc,
                 check};
  r.confirmed_by = engine::probe_question::none;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
