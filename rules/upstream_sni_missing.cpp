// upstream-sni-missing: No SNI sent to a backend named by host name (proxy_ssl_server_name off).

#include <set>

#include "rules/upstream_tls.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "upstream-sni-missing";

constexpr const char* doc = R"(# upstream-sni-missing

## What it flags
An upstream TLS connection with `proxy_ssl_server_name off`, nginx's default (or the grpc /
uwsgi one; stream `proxy_ssl on` too), to a backend named by host name: a `proxy_pass` host
name that names no upstream block, an upstream block with a server given by host name, or an
explicit `proxy_ssl_name` that is then never sent (warning). IP addresses, `localhost`,
unix sockets and variable hosts are not flagged.

## Why it matters
Without SNI a backend that serves several names on one address (another nginx with name-based
servers, a CDN, a Kubernetes ingress, a cloud load balancer) cannot tell which name nginx wants:
it answers with its default server's certificate and session ticket keys, or refuses the
handshake. With `proxy_ssl_verify on` the wrong certificate fails verification (502); with it
off nginx talks to whatever the default server is.

## Example
```nginx
location / {
    proxy_pass https://api.example.com;   # no SNI is sent by default
}
```

## Fix
```nginx
proxy_ssl_server_name on;
proxy_ssl_name api.example.com;   # the name to send when it is not the proxy_pass host
```
`ngxtls harden --upstream NAME=ADDRESS --upstream-ca FILE` writes all of it for the target
nginx version: an upstream block with a zone and `keepalive`, and a location with HTTP/1.1,
the Connection header cleared (before 1.30), session reuse, verification, `proxy_ssl_name` and
SNI (docs/user-guide.md#harden-upstream).

## How the prober confirms it
`ngxtls check --sandbox` points the location's upstream at a stand-in TLS server run by ngxtls
on loopback, which records the server name of every handshake: handshakes without SNI confirm
the finding, a server name received refutes it.

## Source
docs/nginx-facts.md#upstream-tls, measured on nginx 1.22.1, 1.26.3 and 1.30.6 by
tests/integration/test_nginx_upstream_tls.cpp ("proxy_ssl_server_name" cases): the backend's
`$ssl_server_name` was empty by default and `backend.test` with `proxy_ssl_server_name on`
and `proxy_pass https://backend.test`.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  for (const auto& u : m.tls_upstreams) {
    const auto* sni = u.get("ssl_server_name");
    if (!sni || sni->first() != "off" || u.reach == model::backend_reach::unix_socket) continue;
    const auto* name = u.get("ssl_name");
    const bool explicit_name = name && !name->is_default() && !name->args.empty();
    std::string named_by;
    if (explicit_name) {
      named_by = "`" + u.directive("ssl_name") + " " + std::string(name->first()) + "`";
    } else if (u.block) {
      for (const auto& s : m.upstreams[*u.block].servers) {
        const auto hp = model::split_address(s);
        if (!hp.unix_socket && model::is_host_name(hp.host) &&
            model::reach_of_address(s) == model::backend_reach::network) {
          named_by = "its server " + s;
          break;
        }
      }
    } else if (model::is_host_name(u.host) && u.reach == model::backend_reach::network) {
      named_by = "the host name " + u.host;
    }
    if (named_by.empty()) continue;
    auto f = ctx.make(id, engine::severity::warning,
                      "nginx sends no SNI to " + backend_label(ctx, u) + " from " +
                          upstream_place(ctx, u) + ", a backend named by " + named_by + ": `" +
                          u.directive("ssl_server_name") + " off`" +
                          (sni->is_default() ? " (nginx's default)" : "") +
                          ", so a backend serving several names answers with its default "
                          "server's certificate",
                      sni->where() && sni->level == u.location ? sni->where() : u.pass);
    add_target_evidence(ctx, u, f);
    f.facts.push_back(upstream_evidence(ctx, u, "ssl_server_name"));
    f.facts.push_back(upstream_evidence(ctx, u, "ssl_name"));
    const std::string p(model::prefix_of(u.module));
    std::string send = u.ssl_name();
    if (u.block && !explicit_name) {
      const auto hp = model::split_address(named_by.substr(named_by.rfind(' ') + 1));
      send = hp.host;
    }
    f.fix = p + "ssl_server_name on;\n" + p + "ssl_name " + send + ";";
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule upstream_sni_missing() {
  engine::rule r{id, engine::severity::warning,
                 "No SNI sent to a backend named by host name (proxy_ssl_server_name off)", doc,
                 check};
  r.confirmed_by = engine::probe_question::upstream_sni;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
