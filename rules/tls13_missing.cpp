// tls13-missing: a TLS server without TLS 1.3 where nginx and OpenSSL support it.

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "tls13-missing";

constexpr const char* doc = R"(# tls13-missing

## What it flags
A TLS server whose effective `ssl_protocols` lacks TLSv1.3 although the assumed nginx (1.13.0
or later) and OpenSSL (1.1.1 or later) support it: set explicitly, or nginx's default before
1.23.4 (`TLSv1 TLSv1.1 TLSv1.2`), which is why nginx 1.22 serves no TLS 1.3 unless told to.
Warning.
A name-based server (not the default server of any ssl socket it listens on) is judged by
its default servers before nginx 1.29.2: those versions negotiate the protocol with the
default server's `ssl_protocols` and ignore the name-based server's own
(docs/nginx-facts.md#default-server-rules; `protocols-ignored-per-sni` says so).

## Why it matters
TLS 1.3 saves a round trip on every full handshake, drops the legacy algorithms that TLS 1.2
still allows, and encrypts the certificate. Every current browser speaks it. Its absence is
almost always an accident of an old default or an old template.

## Example
```nginx
server { listen 443 ssl; ssl_certificate ...; }   # nginx 1.22: TLSv1 TLSv1.1 TLSv1.2 only
```

## Fix
```nginx
ssl_protocols TLSv1.2 TLSv1.3;
```
If you keep `ssl_session_tickets off`, add a shared session cache (see
`tls13-resumption-disabled`).

## How the prober confirms it
`ngxtls probe --tls1.3` fails to handshake.

## Source
docs/nginx-facts.md#builtin-defaults (ssl_protocols default per nginx version; nginx 1.22 serves no TLS 1.3 unless
told to); nginx CHANGES 1.13.0 (TLSv1.3 parameter), 1.23.4 (TLSv1.3 in the default);
OpenSSL 1.1.1 (first release with TLS 1.3).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (m.versions.openssl < model::version{1, 1, 1} || m.versions.nginx < model::version{1, 13, 0})
    return;
  for (std::size_t i = 0; i < m.servers.size(); ++i) {
    const model::server& s = m.servers[i];
    if (!s.has_ssl) continue;
    // Judged where the protocols are negotiated: at the default server of each socket.
    if (protocols_from_default_servers(m, i)) continue;
    const auto* protocols = s.get("ssl_protocols");
    if (model::protocols_enable(protocols, "TLSv1.3")) continue;
    const bool from_default = !protocols || protocols->from == model::origin::nginx_default;
    auto f = ctx.make(
        id, engine::severity::warning,
        (from_default
             ? "nginx " + m.versions.nginx.str() + "'s default ssl_protocols has no TLSv1.3"
             : std::string("ssl_protocols has no TLSv1.3")) +
            ": clients get slower TLS 1.2 handshakes although nginx " + m.versions.nginx.str() +
            " and OpenSSL " + m.versions.openssl.str() + " support TLS 1.3",
        anchor_of(s, "ssl_protocols"));
    f.facts.push_back(setting_evidence(ctx, s, "ssl_protocols"));
    f.fix = "ssl_protocols TLSv1.2 TLSv1.3;";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule tls13_missing() {
  engine::rule r{id, engine::severity::warning,
                 "TLS 1.3 not enabled although nginx and OpenSSL support it", doc, check};
  r.confirmed_by = engine::probe_question::tls13_handshake;
  return r;
}

}  // namespace ngxtls::rules
