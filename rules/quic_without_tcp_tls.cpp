// quic-without-tcp-tls: a server that listens on QUIC but no server for its names listens with
// TCP TLS, so no browser ever finds its HTTP/3.

#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "quic-without-tcp-tls";

constexpr const char* doc = R"(# quic-without-tcp-tls

## What it flags
On nginx 1.25.0 or later, an http server with a `listen ... quic` socket where neither it nor
any other http server with one of its names (`server_name`, exact text) has a TCP TLS listen
(`listen ... ssl`). Warning, at the first `listen ... quic`.

## Why it matters
Browsers do not start with QUIC: they reach a site over HTTPS on TCP, and try HTTP/3 only after
a response there carries an `Alt-Svc: h3=...` header (RFC 9114 section 3.1.1, RFC 7838), which
nginx never sends on its own (docs/nginx-facts.md#quic). A server that speaks only QUIC is
never reached by a browser over HTTPS: clients that do not know it speaks HTTP/3 get a refused
TCP connection or another server's certificate on port 443.

## Example
```nginx
server {
    listen 443 quic reuseport;
    server_name example.com;
    ssl_certificate     /etc/ssl/example.com.pem;
    ssl_certificate_key /etc/ssl/example.com.key;
}
```

## Fix
```nginx
listen 443 ssl;
add_header Alt-Svc 'h3=":443"; ma=86400' always;
```

## How the prober confirms it
Not applicable: the prober speaks TCP TLS; a probe of the name over TCP fails to connect or
meets another server.

## Source
RFC 9114 section 3.1 (HTTP/3 discovery through Alt-Svc); nginx's ngx_http_v3_module
documentation (its example pairs `listen 8443 quic` with `listen 8443 ssl` and an `Alt-Svc`
header); docs/nginx-facts.md#quic (nginx sends no Alt-Svc of its own, measured on 1.26.3 and
1.30.6).
)";

bool real_name(const std::string& n) {
  return !n.empty() && n != "_";
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (m.versions.nginx < model::version{1, 25, 0}) return;  // no QUIC: directive-arguments
  // The names served over TCP TLS by some http server.
  std::set<std::string_view> tcp_names;
  for (const auto& s : m.servers)
    if (s.context == model::context_kind::http && model::has_tcp_tls(s))
      for (const auto& n : s.names)
        if (real_name(n)) tcp_names.insert(n);
  for (const auto& s : m.servers) {
    if (s.context != model::context_kind::http || model::has_tcp_tls(s)) continue;
    const auto quic = model::quic_sockets_of(m, s);
    if (quic.empty()) continue;
    bool named_elsewhere = false;
    for (const auto& n : s.names) named_elsewhere = named_elsewhere || tcp_names.count(n);
    if (named_elsewhere) continue;
    const config::directive* at = nullptr;
    for (const auto& l : s.listens)
      if (l.quic && l.where && !at) at = l.where;
    const std::string label = server_label(ctx, s);
    auto f = ctx.make(id, engine::severity::warning,
                      label + " listens on QUIC (" + socket_names(quic) +
                          ", UDP) but no server for its names listens with TCP TLS: browsers "
                          "learn of HTTP/3 only from an Alt-Svc header on an HTTPS response "
                          "over TCP, so none reaches this server",
                      at ? at : default_anchor(s));
    f.facts.push_back({"listen ... ssl", "(none for these names)", "http", std::nullopt});
    f.fix = "listen " + std::to_string(quic.front()->port) +
            " ssl;\nadd_header Alt-Svc 'h3=\":" + std::to_string(quic.front()->port) +
            "\"; ma=86400' always;";
    f.server = label;
    for (const auto* k : quic) f.ports.push_back(k->port);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule quic_without_tcp_tls() {
  engine::rule r{id, engine::severity::warning,
                 "QUIC listener without a TCP TLS listener for the same names", doc, check};
  r.confirmed_by = engine::probe_question::none;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
