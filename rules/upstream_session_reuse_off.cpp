// upstream-session-reuse-off: Upstream TLS sessions not resumed: every new upstream connection is a
// full handshake.

#include <set>

#include "rules/upstream_tls.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "upstream-session-reuse-off";

constexpr const char* doc = R"(# upstream-session-reuse-off

## What it flags
An upstream TLS connection (a `proxy_pass https://`, `grpc_pass grpcs://` or `uwsgi_pass
suwsgi://` location, or a stream server with `proxy_ssl on`) whose TLS session nginx never
offers again, so that every new connection to the backend is a full handshake (warning):
- `proxy_ssl_session_reuse off` (or the grpc / uwsgi one) in effect;
- a target with variables that names no upstream block (`set $backend ...; proxy_pass
  https://$backend;`): nginx works the address out per request, and the peer that would hold the
  session lives only as long as the request. A target whose host a variable supplies is judged
  only when the config has no upstream block it could name.

## Why it matters
A full handshake costs the backend a private-key operation and both sides a key exchange and a
certificate verification; a resumed one costs neither. With a connection per request
(`upstream-tls-per-request`) every request pays it.

## Example
```nginx
location / {
    set $backend api.internal:8443;
    proxy_pass https://$backend;   # resolved per request: no session is kept
}
```

## Fix
Let nginx keep sessions: remove `proxy_ssl_session_reuse off`, and name the backend by an
`upstream` block (a `zone` in it shares its servers' sessions between workers):
```nginx
upstream api { zone api 64k; server api.internal:8443; keepalive 16; }
location / { proxy_pass https://api; }
```

`ngxtls harden --upstream NAME=ADDRESS --upstream-ca FILE` writes all of it for the target
nginx version: an upstream block with a zone and `keepalive`, and a location with HTTP/1.1,
the Connection header cleared (before 1.30), session reuse, verification, `proxy_ssl_name` and
SNI (docs/user-guide.md#harden-upstream).

## How the prober confirms it
`ngxtls check --sandbox` points the location's upstream at a stand-in TLS server run by ngxtls
on loopback and sends 50 requests through the location: new upstream TLS connections that are
all full handshakes confirm the finding, a resumed one refutes it. When nginx keeps one connection
for all 50 requests there is no second handshake to resume, and the finding is not testable.

## Source
docs/nginx-facts.md#upstream-tls, measured on nginx 1.22.1, 1.26.3 and 1.30.6 by
tests/integration/test_nginx_upstream_tls.cpp: 10 requests with the defaults made 1 full and 9
resumed handshakes (TLS 1.2 and TLS 1.3 alike); with `proxy_ssl_session_reuse off`, 10 full; with
`set $backend 127.0.0.1:PORT; proxy_pass https://$backend;`, 10 full.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  std::set<const config::directive*> seen;
  for (const auto& u : m.tls_upstreams) {
    const auto* reuse = u.get("ssl_session_reuse");
    if (reuse && reuse->first() == "off") {
      auto f = ctx.make(id, engine::severity::warning,
                        "every new TLS connection from " + upstream_place(ctx, u) + " to " +
                            backend_label(ctx, u) + " is a full handshake: `" +
                            u.directive("ssl_session_reuse") + " off`" +
                            (reuse->level->name == "location" || reuse->level->name == "if"
                                 ? std::string()
                                 : " (set in " + std::string(reuse->level->name) + ")"),
                        u.pass);
      add_target_evidence(ctx, u, f);
      f.facts.push_back(upstream_evidence(ctx, u, "ssl_session_reuse"));
      f.fix = "# delete `" + u.directive("ssl_session_reuse") + " off;` (the default is on)";
      out.push_back(std::move(f));
      continue;
    }
    if (!u.has_variables || u.block) continue;
    // A variable host may name an upstream block at run time: only when there is none.
    if (u.host.empty() && u.reach != model::backend_reach::unix_socket) {
      bool any_block = false;
      for (const auto& b : m.upstreams) any_block = any_block || b.context == u.context;
      if (any_block) continue;
    }
    if (!seen.insert(u.pass).second) continue;
    auto f = ctx.make(id, engine::severity::warning,
                      "every TLS connection from " + upstream_place(ctx, u) +
                          " is a full handshake: `" + u.target +
                          "` holds a variable and names no upstream block, so nginx resolves it "
                          "per request and keeps no session to offer again",
                      u.pass);
    add_target_evidence(ctx, u, f);
    f.facts.push_back({"resolved target", u.resolved_target, "config", std::nullopt});
    f.fix = "upstream backend {\n    zone backend 64k;\n    server " +
            (u.host.empty() ? std::string("ADDRESS") : backend_label(ctx, u)) +
            ";  # `resolve` (nginx 1.27.3+) re-resolves a name\n    keepalive 16;\n}\n" +
            std::string(u.pass->name) + " " +
            (u.module == model::upstream_module::grpc    ? "grpcs://"
             : u.module == model::upstream_module::uwsgi ? "suwsgi://"
             : u.context == model::context_kind::stream  ? ""
                                                         : "https://") +
            "backend;";
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule upstream_session_reuse_off() {
  engine::rule r{
      id, engine::severity::warning,
      "Upstream TLS sessions not resumed: every new upstream connection is a full handshake", doc,
      check};
  r.confirmed_by = engine::probe_question::upstream_resumption;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
