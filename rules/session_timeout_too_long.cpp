// session-timeout-too-long: ssl_session_timeout (which is also the ticket lifetime) above 24 h.

#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "session-timeout-too-long";

constexpr const char* doc = R"(# session-timeout-too-long

## What it flags
`ssl_session_timeout` above 24 hours, on a server with TLS. Warning. nginx uses the same value
as the session cache timeout and as the lifetime of the session tickets it issues.

## Why it matters
A resumed session reuses the secrets of the full handshake it came from. Long-lived sessions
and tickets stretch the window in which one stolen session (or one leaked ticket key) decrypts
or resumes traffic: forward secrecy then holds only per session lifetime. RFC 8446 caps TLS 1.3
ticket lifetimes at 7 days, and Mozilla's server-side TLS guidance uses 1 day.

## Example
```nginx
ssl_session_timeout 7d;
```

## Fix
Keep sessions short and rotate ticket keys instead of stretching lifetimes:
```nginx
ssl_session_timeout 1d;   # or 1h
ssl_session_ticket_key /etc/nginx/keys/current.key;    # rotate daily: new first, old second
ssl_session_ticket_key /etc/nginx/keys/previous.key;
```

## How the prober confirms it
The ticket lifetime hint `ngxtls probe` reports equals the timeout in seconds.

## Source
nginx src/event/ngx_event_openssl.c, ngx_ssl_session_cache: SSL_CTX_set_timeout(timeout), which
OpenSSL also sends as the ticket lifetime hint; RFC 8446 section 4.6.1 (lifetime at most
604800 s); Mozilla Server Side TLS guidelines (ssl_session_timeout 1d).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  std::set<const config::directive*> seen;
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl) continue;
    const auto* st = s.get("ssl_session_timeout");
    if (!st || !st->where() || !seen.insert(st->where()).second) continue;
    auto secs = parse_time_s(st->first());
    if (!secs || *secs <= 86400) continue;
    auto f = ctx.make(
        id, engine::severity::warning,
        "ssl_session_timeout " + std::string(st->first()) + " (" + std::to_string(*secs / 3600) +
            " h) keeps sessions and tickets resumable for more than a day: one leaked "
            "session or ticket key opens that whole window; rotate ticket keys instead",
        st->where());
    f.facts.push_back(setting_evidence(ctx, s, "ssl_session_timeout"));
    f.fix = "ssl_session_timeout 1d;";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule session_timeout_too_long() {
  return {id, engine::severity::warning,
          "ssl_session_timeout (session and ticket lifetime) above 24 hours", doc, check};
}

}  // namespace ngxtls::rules
