// early-data-replay: ssl_early_data on, with no $ssl_early_data passed to the application.

#include <set>

#include "rules/common.hpp"
#include "rules/rules.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "early-data-replay";

constexpr const char* doc = R"(# early-data-replay

## What it flags
A server with TLS 1.3 and `ssl_early_data on` in which no directive passes `$ssl_early_data`
on (e.g. `proxy_set_header Early-Data $ssl_early_data;`, a `fastcgi_param`, `grpc_set_header`
or `uwsgi_param`, in the server, its locations or the `http` block), or checks it. Warning.
In a `stream` server: a note (there is no request to mark).

## Why it matters
0-RTT data can be replayed: an attacker who recorded a client's first flight sends it again
and nginx accepts the same early data each time (3 of 3 replays here; nginx has no
anti-replay). A replayed POST runs twice. RFC 8470 lets the application refuse with 425 Too
Early, but only if it knows which requests came as early data: nginx tells it through
`$ssl_early_data`.

## Example
```nginx
server {
    listen 443 ssl;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_early_data on;
    location / { proxy_pass http://app; }
}
```

## Fix
```nginx
proxy_set_header Early-Data $ssl_early_data;   # the app answers 425 to non-idempotent early requests
```
or turn 0-RTT off: `ssl_early_data off;`.

## How the prober confirms it
`ngxtls probe --tls1.3` reports the max early data size (16384) carried in tickets.

## Source
docs/nginx-facts.md#early-data-replay (nginx 1.22.1 / OpenSSL 3.0: the same ticket's early data accepted on 3 of 3
replays); RFC 8470 (Early-Data header, 425 Too Early); nginx docs ngx_http_ssl_module
`ssl_early_data`.
)";

bool mentions_early_data(const config::directive& d) {
  for (const auto& a : d.args)
    if (a.value().find("$ssl_early_data") != std::string::npos ||
        a.value().find("${ssl_early_data}") != std::string::npos)
      return true;
  return false;
}

bool passes_on(const config::directive* block) {
  if (!block) return false;
  bool found = false;
  walk(block->block, [&](const config::directive& d) {
    if (!found && mentions_early_data(d)) found = true;
  });
  return found;
}

bool http_level_passes_on(const config::directive* http) {
  if (!http) return false;
  for (const auto& d : http->block)
    if (!d.has_block && mentions_early_data(d)) return true;
  return false;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  std::set<const config::directive*> seen_servers;
  for (const auto& s : m.servers) {
    if (!s.has_ssl || !model::is_on(s.get("ssl_early_data")) || !tls13_enabled(m, s)) continue;
    if (!seen_servers.insert(s.where).second) continue;
    const bool stream = s.context == model::context_kind::stream;
    if (!stream && (passes_on(s.where) || http_level_passes_on(enclosing_block(m, s)))) continue;
    auto f = ctx.make(
        id, stream ? engine::severity::note : engine::severity::warning,
        stream ? "ssl_early_data on in a stream server: 0-RTT data can be replayed and the "
                 "proxied service cannot tell early data apart"
               : "ssl_early_data on but $ssl_early_data is never passed to the application: "
                 "replayed 0-RTT requests run again and the backend cannot answer "
                 "425 Too Early",
        anchor_of(s, "ssl_early_data"));
    f.facts.push_back(setting_evidence(ctx, s, "ssl_early_data"));
    f.facts.push_back(setting_evidence(ctx, s, "ssl_protocols"));
    f.fix = stream ? "ssl_early_data off;" : "proxy_set_header Early-Data $ssl_early_data;";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule early_data_replay() {
  return {id, engine::severity::warning,
          "0-RTT on without passing $ssl_early_data upstream: replayed requests run again", doc,
          check};
}

}  // namespace ngxtls::rules
