// upstream-not-verified: The backend's certificate is not verified (proxy_ssl_verify off) for a
// backend over a network.

#include <set>

#include "rules/upstream_tls.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "upstream-not-verified";

constexpr const char* doc = R"(# upstream-not-verified

## What it flags
An upstream TLS connection to a backend reached over a network (any address but loopback, any
host name but `localhost`; for an upstream block, any of its servers) with
`proxy_ssl_verify off`, nginx's default (or the grpc / uwsgi one; stream `proxy_ssl on` too):
nginx accepts whatever certificate the backend presents (warning). Loopback addresses and unix
sockets are not flagged, nor targets whose host a variable supplies.

## Why it matters
TLS without verification keeps out passive listeners only: anyone who can answer for the
backend's address (a compromised host on the path, ARP or DNS spoofing, a misrouted VIP) gets
the requests, their cookies and tokens, and the responses nginx serves. nginx logs nothing.

## Example
```nginx
location / {
    proxy_pass https://api.internal:8443;   # proxy_ssl_verify is off by default
}
```

## Fix
```nginx
proxy_ssl_verify on;
proxy_ssl_trusted_certificate /etc/ssl/certs/internal-ca.pem;  # the CA that issued the backend's certificate
proxy_ssl_name api.internal;       # the name its certificate holds (default: the proxy_pass host)
proxy_ssl_server_name on;          # and send it as SNI
```
The default `proxy_ssl_verify_depth 1` accepts a backend certificate issued by one intermediate
CA under the trusted root (and 0 refuses it); a longer chain needs a larger depth.
`ngxtls harden --upstream NAME=ADDRESS --upstream-ca FILE` writes all of it for the target
nginx version: an upstream block with a zone and `keepalive`, and a location with HTTP/1.1,
the Connection header cleared (before 1.30), session reuse, verification, `proxy_ssl_name` and
SNI (docs/user-guide.md#harden-upstream).
`proxy_ssl_verify on` without `proxy_ssl_trusted_certificate` is an error at start
(`upstream-tls-config-error`).

## How the prober confirms it
`ngxtls check --sandbox` runs a copy of the location against a stand-in TLS server whose
certificate is issued for another name (`wrong-name.ngxtls.invalid`) and sends 50 requests:
nginx completing them confirms the finding, 502 Bad Gateway for every one refutes it (nginx
verified the certificate and refused it). Stream servers are not tested this way (a second
variant would need a listen socket of its own).

## Source
nginx documentation, ngx_http_proxy_module: proxy_ssl_verify (default off), proxy_ssl_name
(default $proxy_host), proxy_ssl_verify_depth (default 1); docs/nginx-facts.md#upstream-tls
(the error without a trusted certificate, and what depth 1 accepts, measured on nginx 1.22.1,
1.26.3 and 1.30.6 by tests/integration/test_harden_upstream.cpp: a backend whose certificate
another CA issued gets 502 with verification on).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  for (const auto& u : ctx.model().tls_upstreams) {
    if (u.reach != model::backend_reach::network) continue;
    const auto* verify = u.get("ssl_verify");
    if (!verify || verify->first() != "off") continue;
    auto f = ctx.make(id, engine::severity::warning,
                      "nginx does not verify the certificate of " + backend_label(ctx, u) +
                          ", reached over the network from " + upstream_place(ctx, u) + ": `" +
                          u.directive("ssl_verify") + " off`" +
                          (verify->is_default() ? " (nginx's default)" : "") +
                          " accepts any certificate, so whoever answers for that address gets "
                          "the requests",
                      verify->where() && verify->level == u.location ? verify->where() : u.pass);
    add_target_evidence(ctx, u, f);
    f.facts.push_back(upstream_evidence(ctx, u, "ssl_verify"));
    f.facts.push_back(upstream_evidence(ctx, u, "ssl_trusted_certificate"));
    f.facts.push_back(upstream_evidence(ctx, u, "ssl_name"));
    const std::string p(model::prefix_of(u.module));
    const std::string name = u.ssl_name().empty() ? "BACKEND.NAME" : u.ssl_name();
    f.fix = p + "ssl_verify on;\n" + p +
            "ssl_trusted_certificate /etc/ssl/certs/backend-ca.pem;  # the CA of the backend's "
            "certificate\n" +
            p + "ssl_name " + name + ";  # the name in that certificate\n" + p +
            "ssl_server_name on;";
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule upstream_not_verified() {
  engine::rule r{id, engine::severity::warning,
                 "The backend's certificate is not verified (proxy_ssl_verify off) for a backend "
                 "over a network",
                 doc, check};
  r.confirmed_by = engine::probe_question::upstream_verification;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
