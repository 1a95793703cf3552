// session-cache-too-small: a shared session cache that cannot hold the sessions created within
// one ssl_session_timeout at the expected load (.ngxtls.toml [load]).

#include <cmath>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "session-cache-too-small";

// nginx docs, ssl_session_cache: "One megabyte of the cache contains about 4000 sessions."
constexpr double sessions_per_mb = 4000.0;

constexpr const char* doc = R"(# session-cache-too-small

## What it flags
A `shared:` session cache (of a socket's default server) whose size holds fewer sessions than
arrive within one `ssl_session_timeout` at the load you declared in `.ngxtls.toml`:
```toml
[load]
new_sessions_per_second = 300   # full handshakes per second on one instance
```
Warning. Without `[load]` the rule says nothing.

## Why it matters
When the zone is full nginx evicts the oldest sessions (and logs "could not allocate new
session" on older versions): clients that come back within the timeout still get a full
handshake. The timeout then promises more than the cache keeps.

## Example
```nginx
ssl_session_cache shared:SSL:1m;    # about 4,000 sessions
ssl_session_timeout 1h;             # 300/s x 3600 s = 1,080,000 sessions needed
```

## Fix
Size the zone to rate x timeout / 4000 per MB, or shorten the timeout:
```nginx
ssl_session_cache shared:SSL:270m;
```

## How the prober confirms it
Not directly: the prober's few sessions fit any cache. Watch nginx's error log for
"could not allocate new session" and the resumption rate under real load.

## Source
nginx docs, ngx_http_ssl_module `ssl_session_cache` ("one megabyte of the cache contains about
4000 sessions"); nginx src/event/ngx_event_openssl.c, ngx_ssl_new_session (evicts the
oldest session when the zone is full).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& opts = ctx.options();
  if (!opts.new_sessions_per_second) return;
  const auto& m = ctx.model();
  for (const auto& [di, sockets] : ssl_sockets_by_default(m)) {
    const model::server& d = m.servers[di];
    const auto* cache = d.get("ssl_session_cache");
    auto bytes = model::shared_cache_bytes(cache);
    if (!bytes) continue;
    auto timeout =
        parse_time_s(d.get("ssl_session_timeout") ? d.get("ssl_session_timeout")->first() : "5m");
    if (!timeout) continue;
    const double capacity = static_cast<double>(*bytes) / (1024.0 * 1024.0) * sessions_per_mb;
    const double needed = *opts.new_sessions_per_second * static_cast<double>(*timeout);
    if (needed <= capacity) continue;
    const auto mb = static_cast<long long>(std::ceil(needed / sessions_per_mb));
    auto f = ctx.make(id, engine::severity::warning,
                      "the shared session cache on " + socket_names(sockets) + " holds about " +
                          std::to_string(static_cast<long long>(capacity)) + " sessions but " +
                          std::to_string(static_cast<long long>(needed)) +
                          " arrive within ssl_session_timeout at the declared " +
                          std::to_string(static_cast<long long>(*opts.new_sessions_per_second)) +
                          " new sessions/s: older sessions are evicted before they expire",
                      anchor_of(d, "ssl_session_cache"));
    f.facts.push_back(setting_evidence(ctx, d, "ssl_session_cache"));
    f.facts.push_back(setting_evidence(ctx, d, "ssl_session_timeout"));
    f.facts.push_back({"new_sessions_per_second", std::to_string(*opts.new_sessions_per_second),
                       ".ngxtls.toml", std::nullopt});
    f.fix =
        "ssl_session_cache shared:SSL:" + std::to_string(mb) + "m;  # rate x timeout / 4000 per MB";
    f.server = server_label(ctx, d);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule session_cache_too_small() {
  engine::rule r{id, engine::severity::warning,
                 "Shared session cache smaller than the declared load needs for its timeout", doc,
                 check};
  r.costs_resumption = true;
  return r;
}

}  // namespace ngxtls::rules
