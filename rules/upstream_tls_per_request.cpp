// upstream-tls-per-request: A TLS upstream without connection reuse: a TLS handshake to the backend
// for every request.

#include <algorithm>
#include <set>

#include "config/values.hpp"
#include "rules/upstream_tls.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "upstream-tls-per-request";

constexpr const char* doc = R"(# upstream-tls-per-request

## What it flags
A `proxy_pass https://...` or `grpc_pass grpcs://...` in an http location whose upstream
connections cannot be kept, so that nginx opens a new TCP and TLS connection to the backend for
every request (warning). For proxy_pass, all three must hold for a connection to be kept, and the
finding names each one that does not:
- the target names an `upstream` block with `keepalive N` (an address, a host name or a
  variable target has no pool to keep connections in);
- `proxy_http_version 1.1` (the default is 1.0 before nginx 1.30, 1.1 from 1.30);
- the Connection header cleared, `proxy_set_header Connection "";` (before 1.30 nginx sends
  `Connection: close` unless told otherwise; a level that sets any `proxy_set_header` replaces
  the whole inherited list, so a Connection header set in `http` is lost in a location that sets
  `Host`). nginx 1.30 sends no Connection header of its own.
From nginx 1.30 an upstream block keeps idle connections without `keepalive`, so on 1.30 only
a target without an upstream block, `keepalive 0`, an explicit `proxy_http_version 1.0` or an
explicit `Connection: close` is flagged.
grpc_pass needs only the upstream block's `keepalive`. A Connection header taken from a variable
(a `map` of `$http_upgrade`) is not judged. uwsgi and stream proxying are not flagged here.

## Why it matters
Each request then pays a TCP handshake and a TLS handshake to the backend before its first
byte: a resumed handshake when the previous connection's session is offered again
(`proxy_ssl_session_reuse on`, the default; nginx keeps one session per upstream server and
worker), a full one with a certificate verification and a key exchange when it is not
(`upstream-session-reuse-off`). At a few thousand requests per second that is the backend's
(and nginx's) TLS CPU, and a round trip or two added to every request.

## Example
```nginx
location /api/ {
    proxy_pass https://10.0.0.5:8443;     # no upstream block, HTTP/1.0, Connection: close
}
```

## Fix
```nginx
upstream api_backend {
    server 10.0.0.5:8443;
    keepalive 16;                  # idle connections kept per worker
}
location /api/ {
    proxy_pass https://api_backend;
    proxy_http_version 1.1;
    proxy_set_header Connection "";  # repeat this level's other proxy_set_header lines
}
```

`ngxtls harden --upstream NAME=ADDRESS --upstream-ca FILE` writes all of it for the target
nginx version: an upstream block with a zone and `keepalive`, and a location with HTTP/1.1,
the Connection header cleared (before 1.30), session reuse, verification, `proxy_ssl_name` and
SNI (docs/user-guide.md#harden-upstream).

## How the prober confirms it
`ngxtls check --sandbox` points the location's upstream at a stand-in TLS server run by ngxtls
on loopback (its certificate for the configured name) and sends 50 requests through the location
from 5 keep-alive client connections, one at a time; the stand-in counts the TLS connections,
full and resumed handshakes and the requests on each. A new upstream connection for every request
confirms the finding ("50 requests through /api/ opened 50 upstream TLS connections: 1 full
handshake, 49 resumed, no SNI"); fewer refute it. `check --sandbox --load` prices the fix:
requests per second through the location as configured and with keepalive, HTTP/1.1, a cleared
Connection header and session reuse, one after the other in the same sandbox.

## Source
docs/nginx-facts.md#upstream-tls, measured on nginx 1.22.1, 1.26.3 and 1.30.6 by
tests/integration/test_nginx_upstream_tls.cpp: 10 requests through `proxy_pass https://ADDR`
reached the backend on 10 TLS connections (1 full handshake, 9 resumed) as HTTP/1.0 with
`Connection: close`; with `keepalive 4` alone, or with HTTP/1.1 and nginx's `Connection: close`,
or with the header cleared and HTTP/1.0, still 10; with all three, 1 connection for 10 requests.
On 1.30.6 the defaults are HTTP/1.1 without a Connection header and an upstream block keeps
connections without `keepalive` (1 connection for 10 requests); `proxy_pass https://ADDR`
without a block still opened 10.
)";

using config::equal_ignoring_case;

// Every connection of `u` is to a unix socket (no TCP handshake to price): its upstream block's
// servers all are, or the target itself is one.
bool over_unix_socket(const model::model& m, const model::tls_upstream& u) {
  if (!u.block) return u.resolved_target.find("unix:") != std::string::npos;
  const auto& servers = m.upstreams[*u.block].servers;
  return !servers.empty() && std::all_of(servers.begin(), servers.end(), [](const auto& s) {
    return model::split_address(s).unix_socket;
  });
}

// `map $http_upgrade $connection_upgrade { default upgrade; '' close; }`: what it sends.
std::string map_reason(const model::tls_upstream& u) {
  const std::string var(u.connection_map->args[1].value());
  if (equal_ignoring_case(u.connection_map->args[0].value(), "$http_upgrade"))
    return "every request without an Upgrade header sends `Connection: close` (`map " +
           std::string(u.connection_map->args[0].value()) + " " + var + "` gives `close` for " +
           (u.connection_map_entry && u.connection_map_entry->name.empty() ? "''" : "its default") +
           ")";
  return "`Connection: close` is sent (`map " + std::string(u.connection_map->args[0].value()) +
         " " + var + "` gives `close` for every request)";
}

std::string map_fix(const model::tls_upstream& u) {
  const std::string source(u.connection_map->args[0].value()),
      var(u.connection_map->args[1].value());
  if (!equal_ignoring_case(source, "$http_upgrade"))
    return "# map " + source + " " + var + ": give \"\" instead of close (no Connection header)\n";
  return "map " + source + " " + var +
         " {\n    default upgrade;\n    ''      \"\";  # no Connection header without Upgrade: "
         "the connection is kept\n}\n";
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  for (const auto& u : m.tls_upstreams) {
    if (u.context != model::context_kind::http || u.module == model::upstream_module::uwsgi)
      continue;
    // The Connection header requests get: as written, or what the map gives requests without
    // an Upgrade header; when each request decides, the header is not judged.
    const std::optional<std::string> connection =
        u.connection_variable ? u.connection_for_plain_requests
                              : std::optional<std::string>(u.connection_header);
    if (u.module == model::upstream_module::proxy && !connection) continue;
    const bool sends_close = connection && equal_ignoring_case(*connection, "close");
    std::vector<std::string> reasons;
    const model::upstream_block* block = u.block ? &m.upstreams[*u.block] : nullptr;
    if (!block && u.map_selects_upstream_blocks) {
      // Each request goes to one of the blocks the map names: their keepalive is not judged.
    } else if (!block)
      reasons.push_back(u.has_variables
                            ? "the target is worked out per request and names no upstream block"
                            : "the target names no upstream block, so no connection is kept");
    else if ((!block->keepalive &&
              !model::keeps_upstream_connections_by_default(m.versions.nginx)) ||
             (block->keepalive && *block->keepalive == 0))
      reasons.push_back("upstream `" + block->name + "` has no `keepalive`");
    const bool proxy = u.module == model::upstream_module::proxy;
    if (proxy && u.http_version == "1.0")
      reasons.push_back(std::string("proxy_http_version is 1.0") +
                        (u.get("http_version")->is_default() ? " (nginx's default)" : ""));
    if (proxy && sends_close)
      reasons.push_back(u.connection_map ? map_reason(u)
                        : u.connection_where
                            ? "`Connection: close` is sent"
                            : "nginx sends `Connection: close` (no `proxy_set_header Connection "
                              "\"\"` at this level)");
    if (reasons.empty()) continue;
    std::string why;
    for (std::size_t i = 0; i < reasons.size(); ++i)
      why += (i == 0 ? "" : i + 1 == reasons.size() ? " and " : ", ") + reasons[i];
    const auto* reuse = u.get("ssl_session_reuse");
    // nginx keeps the last session per upstream server and worker whether or not an upstream
    // block names it; only a target worked out per request has none to offer (measured:
    // test_sandbox_upstream, 49 of 50 resumed without a block, 0 of 50 with a variable).
    const bool resumes = reuse && reuse->first() == "on" &&
                         (block || !u.has_variables || u.map_selects_upstream_blocks);
    const std::string cost =
        std::string(over_unix_socket(m, u) ? "a unix socket connection" : "a TCP") +
        (!resumes ? " and a full TLS handshake to the backend"
         : block && block->zone_where
             ? " and a resumed TLS handshake to the backend (a full one for the first "
               "request after a start: the zone shares the session between workers)"
             : " and a resumed TLS handshake to the backend (a full one for the first "
               "request of each worker)");
    auto f = ctx.make(id, engine::severity::warning,
                      "every request through " + upstream_place(ctx, u) +
                          " opens a new TLS connection to " + backend_label(ctx, u) + ": " + why +
                          "; each request costs " + cost,
                      u.pass);
    add_target_evidence(ctx, u, f);
    if (block)
      f.facts.push_back({"keepalive",
                         block->keepalive ? std::to_string(*block->keepalive) : "(not set)",
                         "upstream",
                         block->keepalive_where ? std::optional(ctx.where(block->keepalive_where))
                                                : std::nullopt});
    if (proxy) {
      f.facts.push_back(upstream_evidence(ctx, u, "http_version"));
      if (u.connection_map)
        f.facts.push_back({"map " + std::string(u.connection_map->args[0].value()) + " " +
                               std::string(u.connection_map->args[1].value()),
                           connection ? "gives `" + *connection + "` without Upgrade" : "", "http",
                           ctx.where(u.connection_map)});
      f.facts.push_back(
          {"Connection header sent", u.connection_header,
           u.connection_where ? "proxy_set_header" : "default",
           u.connection_where ? std::optional(ctx.where(u.connection_where)) : std::nullopt});
    }
    const std::string name = block ? block->name : "backend";
    std::string fix;
    if (!block ||
        (block->keepalive ? *block->keepalive == 0
                          : !model::keeps_upstream_connections_by_default(m.versions.nginx)))
      fix += "upstream " + name + " {\n    server " +
             (block ? (block->servers.empty() ? std::string("ADDRESS") : block->servers.front())
                    : (u.host.empty() ? std::string("ADDRESS") : backend_label(ctx, u))) +
             ";\n    keepalive 16;\n}\n";
    if (!block)
      fix += std::string(u.pass->name) + " " + (proxy ? "https://" : "grpcs://") + name + ";\n";
    if (proxy && u.http_version == "1.0") fix += "proxy_http_version 1.1;\n";
    if (proxy && sends_close && u.connection_map)
      fix += map_fix(u);
    else if (proxy && sends_close)
      fix += "proxy_set_header Connection \"\";  # and this level's other proxy_set_header lines\n";
    if (!fix.empty() && fix.back() == '\n') fix.pop_back();
    f.fix = fix;
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule upstream_tls_per_request() {
  engine::rule r{
      id, engine::severity::warning,
      "A TLS upstream without connection reuse: a TLS handshake to the backend for every request",
      doc, check};
  r.confirmed_by = engine::probe_question::upstream_connections;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
