// quic-early-data: ssl_early_data on a QUIC server: 0-RTT over HTTP/3 where the linked OpenSSL
// allows it (replayable), no effect where nginx's OpenSSL compatibility layer runs QUIC.

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "quic-early-data";

constexpr const char* doc = R"(# quic-early-data

## What it flags
An http server with a `listen ... quic` and `ssl_early_data on` (its own or inherited), on nginx
1.25.0 or later. What QUIC does with it depends on the build:
- nginx 1.29.1 or later with OpenSSL 3.5.1 or later (OpenSSL's own QUIC API): 0-RTT over
  HTTP/3 is accepted. Warning on a server that listens on QUIC only (`early-data-replay`, which
  judges each location's handling of `$ssl_early_data`, covers servers with a TCP TLS listen
  only); a note on a server that has both (`$ssl_early_data` is "1" for those HTTP/3 requests
  too, so the same handling covers them).
- older nginx or OpenSSL: nginx runs QUIC through its OpenSSL compatibility layer, which has
  no early data: a note that the directive does nothing for QUIC (it still applies to TCP TLS
  1.3).

## Why it matters
0-RTT requests can be replayed by anyone who recorded them (RFC 9001 section 9.2; nginx has no
anti-replay, docs/nginx-facts.md#early-data-replay). Over QUIC the hazard is the same as over
TCP, but an operator who guarded only the TCP side, or who expects 0-RTT over HTTP/3 from a
build that cannot do it, is wrong about what the server does.

## Example
```nginx
server {
    listen 443 quic reuseport;
    ssl_early_data on;
    location / { proxy_pass http://app; }
}
```

## Fix
```nginx
proxy_set_header Early-Data $ssl_early_data;  # let the application answer 425 Too Early
```
or `ssl_early_data off;`.

## How the prober confirms it
`ngxtls check --sandbox` runs the QUIC probe on each QUIC socket of the server and sends `HEAD /`
as 0-RTT with a ticket that allows it, then replays it. 0-RTT accepted confirms the finding
that says the build accepts it (1.30.6 with OpenSSL 3.6: accepted, the replay answered 200) and
refutes the one that says it has none; tickets that allow no 0-RTT (1.26.3 through the
compatibility layer: `max_early_data` 0) or 0-RTT rejected the other way round.
tests/integration/test_quic_nginx.cpp "check --sandbox judges quic_host_key across reloads and
instances and 0-RTT".

## Source
docs/nginx-facts.md#quic (measured with ngtcp2's example client: 0-RTT rejected by 1.26.3 with
OpenSSL 3.0.19 through the compatibility layer, accepted by 1.30.6 with OpenSSL 3.6.5 and
answered with `$ssl_early_data` "1"; tests/integration/test_quic_nginx.cpp); nginx's
ngx_http_v3_module documentation ("OpenSSL version 3.5.1 or higher is required to support
0-RTT"; "Before 1.29.1, 0-RTT could not be enabled with OpenSSL regardless of ssl_early_data").
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (m.versions.nginx < model::version{1, 25, 0}) return;
  const bool quic_0rtt =
      m.versions.nginx >= model::version{1, 29, 1} && m.versions.openssl >= model::version{3, 5, 1};
  const std::string build =
      "nginx " + m.versions.nginx.str() + " with OpenSSL " + m.versions.openssl.str();
  for (const auto& s : m.servers) {
    if (s.context != model::context_kind::http || !s.where) continue;
    const auto quic = model::quic_sockets_of(m, s);
    if (quic.empty()) continue;
    const auto* early = s.get("ssl_early_data");
    if (!model::is_on(early)) continue;
    const bool tcp = model::has_tcp_tls(s);
    engine::finding f;
    if (quic_0rtt) {
      f = ctx.make(id, tcp ? engine::severity::note : engine::severity::warning,
                   "ssl_early_data on: " + build + " accepts 0-RTT over QUIC on " +
                       socket_names(quic) +
                       ", and anyone who recorded such a request can replay it" +
                       (tcp ? " (the HTTP/3 requests carry $ssl_early_data \"1\" as the TCP ones "
                              "do: early-data-replay's judgement of the locations covers both)"
                            : ": pass $ssl_early_data to the application or refuse early "
                              "requests with 425"),
                   early->where() ? early->where() : default_anchor(s));
    } else {
      f = ctx.make(id, engine::severity::note,
                   "ssl_early_data on does nothing for QUIC on " + socket_names(quic) + ": " +
                       build +
                       " runs QUIC through nginx's OpenSSL compatibility layer, which has no "
                       "early data (0-RTT over QUIC needs nginx 1.29.1 and OpenSSL 3.5.1)" +
                       (tcp ? "; TCP TLS 1.3 clients still send 0-RTT" : ""),
                   early->where() ? early->where() : default_anchor(s));
    }
    f.facts.push_back(setting_evidence(ctx, s, "ssl_early_data"));
    f.facts.push_back(
        {"OpenSSL version", m.versions.openssl.str(), m.versions.openssl_source, std::nullopt});
    f.fix = quic_0rtt ? "proxy_set_header Early-Data $ssl_early_data;  # or ssl_early_data off;"
                      : "ssl_early_data off;  # or build with OpenSSL 3.5.1+ for 0-RTT over QUIC";
    f.server = server_label(ctx, s);
    for (const auto* k : quic) f.ports.push_back(k->port);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule quic_early_data() {
  engine::rule r{id, engine::severity::warning,
                 "ssl_early_data on over QUIC: replayable 0-RTT, or none with the OpenSSL "
                 "compatibility layer",
                 doc, check};
  r.confirmed_by = engine::probe_question::quic_early_data;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
