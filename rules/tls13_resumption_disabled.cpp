// tls13-resumption-disabled: `ssl_session_tickets off` without a session cache, and ticket
// settings that differ between a socket's default server and its name-based servers.

#include <algorithm>
#include <set>
#include <unordered_set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "tls13-resumption-disabled";

constexpr const char* doc = R"(# tls13-resumption-disabled

## What it flags
- A listen socket that serves TLS 1.3 whose default server has `ssl_session_tickets off` and no
  session cache (`ssl_session_cache` is `none` or `off`, nginx's default is `none`). Error.
- The same with a `shared:` cache: a note, because TLS 1.3 resumption then works but is
  stateful and bound to this host's cache.
- `ssl_session_tickets` set differently in the default server and a name-based server of the
  same socket (this rule owns every such mismatch):
  - before nginx 1.29.2: error when the default server has tickets off and a name-based server
    has them on (its tickets never resume); error when the default server has them on and a
    TLS 1.3 name-based server has them off (no TLS 1.3 ticket at all under that name, even
    with a shared cache); warning for a TLS 1.2-only name-based server with tickets off and a
    session cache (without one nothing resumes there: `tls12-resumption-disabled`).
  - from nginx 1.29.2 the name-based server's own setting applies: no finding for tickets on
    there; tickets off there is judged as tickets off in that server with the default
    server's session cache (error without a cache, note with a `shared:` one).

## Why it matters
`ssl_session_tickets off` does not stop TLS 1.3 tickets. OpenSSL then issues *stateful*
tickets (a 32-byte session ID) that resume only through the server's session cache. With no
cache every client receives two tickets on every connection and never resumes: each
connection is a full handshake (more CPU, one more round trip). TLS 1.2 clients cannot resume
either: session IDs need the cache too.

On one listen socket the session cache, timeout and ticket keys come from the default server
(the one marked `default_server`, else the first server listening there). Before nginx
1.29.2, a name-based server with tickets on behind a default server with tickets off gets
tickets issued that never resume, and a name-based server with tickets off behind a default
server with tickets on gets no TLS 1.3 ticket at all, so its TLS 1.3 clients never resume,
even with a shared cache. From 1.29.2 nginx applies the name-based server's
`ssl_session_tickets` (SNI before resumption), with the default server's cache.

## Example
```nginx
server {
    listen 443 ssl;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_tickets off;      # copied from a hardening template; no ssl_session_cache
}
```

## Fix
Keep tickets off if you want, but give the server a shared cache:
```nginx
ssl_session_cache shared:SSL:10m;   # about 40,000 sessions
ssl_session_timeout 1h;
```
or turn tickets back on with `ssl_session_ticket_key` files shared by every instance
(see `ticket-keys-not-shared`). Put ticket and cache settings in the default server, or
better in the `http` block, so every server on a socket agrees.

## How the prober confirms it
`ngxtls probe --tls1.3` shows tickets arriving (stateful: 32 bytes) and 0% resumption;
with a shared cache the same config resumes 100%.

## Source
docs/nginx-facts.md#tickets-off-tls13 (measured on nginx 1.22.1 / OpenSSL 3.0: 0/40 without cache, 40/40 with
`shared:`). The mismatch cases are measured on Debian 12's 1.22.1, upstream 1.26.3 and Debian
sid's 1.30.6 (OpenSSL 3.6) by tests/integration/test_nginx_versions.cpp, TLS 1.3 at SNI b
with `ngxtls probe -n 20`:
- "default server tickets off and b on without cache": 0/20, 0/20, 20/20;
- "default server tickets on and b off without cache": no ticket, no ticket, 0/20 with
  stateful tickets;
- "default server tickets on and b off with a shared cache in http": no ticket, no ticket,
  20/20 stateful.
nginx CHANGES 1.29.2: SNI is applied before resumption.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  const bool sni_before_resumption = m.versions.nginx >= model::version{1, 29, 2};
  for (const auto& [di, sockets] : ssl_sockets_by_default(m)) {
    const model::server& d = m.servers[di];
    const bool tls13 = tls13_enabled(m, d);
    const bool tls12 = model::protocols_enable(d.get("ssl_protocols"), "TLSv1.2");
    const bool d_tickets = model::is_on(d.get("ssl_session_tickets"));
    const auto cache = model::cache_kind(d.get("ssl_session_cache"));
    const std::string where_sockets = socket_names(sockets);
    std::vector<int> ports;
    for (const auto* k : sockets) ports.push_back(k->port);
    auto add_evidence = [&](engine::finding& f, const model::server& s) {
      f.ports = ports;
      for (const char* n : {"ssl_protocols", "ssl_session_tickets", "ssl_session_cache"})
        f.facts.push_back(setting_evidence(ctx, s, n));
    };
    if (tls13 && !d_tickets) {
      const auto* at = d.get("ssl_session_tickets")->where();
      if (cache == model::session_cache_kind::none || cache == model::session_cache_kind::off) {
        auto f = ctx.make(id, engine::severity::error,
                          "no TLS 1.3 client can resume on " + where_sockets +
                              ": `ssl_session_tickets off` makes OpenSSL issue stateful tickets "
                              "that need a session cache, and ssl_session_cache is " +
                              std::string(d.get("ssl_session_cache")->first()) +
                              (tls12 ? "; TLS 1.2 clients cannot resume either" : "") +
                              " (every connection is a full handshake)",
                          at);
        add_evidence(f, d);
        f.fix = shared_cache_fix;
        f.server = server_label(ctx, d);
        add_shared_cache_edit(ctx, d, at, f);
        out.push_back(std::move(f));
      } else if (cache == model::session_cache_kind::shared) {
        auto f = ctx.make(id, engine::severity::note,
                          "TLS 1.3 clients resume on " + where_sockets +
                              " through the shared session cache (`ssl_session_tickets off` "
                              "makes its tickets stateful): this works; what it trades is that "
                              "sessions live in this host's cache only, so another instance "
                              "behind the same name cannot resume them",
                          at);
        add_evidence(f, d);
        f.server = server_label(ctx, d);
        out.push_back(std::move(f));
      }
    }
    // Mismatches between the default server and the name-based servers of its sockets.
    // A set, not a list: one socket may carry thousands of name-based servers.
    std::unordered_set<std::size_t> seen;
    for (const auto* k : sockets) {
      for (std::size_t si : k->servers) {
        if (si == di || !seen.insert(si).second) continue;
        const model::server& s = m.servers[si];
        const bool s_tickets = model::is_on(s.get("ssl_session_tickets"));
        if (s_tickets == d_tickets) continue;
        const auto* s_at = s.get("ssl_session_tickets")->where();
        if (!s_at) s_at = default_anchor(s);
        const std::string who = server_label(ctx, s);
        const std::string dname = server_label(ctx, d);
        engine::finding f;
        if (sni_before_resumption) {
          // From 1.29.2 the name-based server's own ssl_session_tickets applies: tickets on
          // there resume (20/20 at SNI b on 1.30.6), and tickets off there is judged as tickets
          // off in that server with the default server's session cache.
          if (s_tickets) continue;
          const bool s_tls13 = tls13_enabled(m, s);
          const bool s_tls12 = model::protocols_enable(s.get("ssl_protocols"), "TLSv1.2");
          if (!s_tls13) continue;
          if (cache == model::session_cache_kind::none || cache == model::session_cache_kind::off) {
            f = ctx.make(id, engine::severity::error,
                         "no TLS 1.3 client of " + who + " can resume on " + where_sockets +
                             ": its `ssl_session_tickets off` makes OpenSSL issue stateful tickets "
                             "that need a session cache, and the default server " +
                             dname + ", whose cache serves the socket, has ssl_session_cache " +
                             std::string(d.get("ssl_session_cache")->first()) +
                             (s_tls12 ? "; TLS 1.2 clients cannot resume either" : ""),
                         s_at);
          } else if (cache == model::session_cache_kind::shared) {
            f = ctx.make(id, engine::severity::note,
                         "TLS 1.3 resumption of " + who + " on " + where_sockets +
                             " is stateful (`ssl_session_tickets off` there, with the default "
                             "server's shared cache): it works only on this host",
                         s_at);
          } else {
            continue;
          }
        } else if (!d_tickets) {
          f = ctx.make(id, engine::severity::error,
                       who + " has session tickets on but the default server " + dname + " of " +
                           where_sockets +
                           " has `ssl_session_tickets off`: tickets issued under this name "
                           "never resume (the default server's settings rule the handshake)",
                       s_at);
        } else if (tls13_enabled(m, s)) {
          // Measured on 1.22.1 and 1.26.3: no TLS 1.3 ticket at all at SNI b, with or without
          // a shared cache in http.
          f = ctx.make(
              id, engine::severity::error,
              "no TLS 1.3 client of " + who + " can resume on " + where_sockets +
                  ": with `ssl_session_tickets off` in this name-based server and on in the "
                  "default server " +
                  dname +
                  ", nginx < 1.29.2 issues no TLS 1.3 ticket at all under this "
                  "name, even with a shared session cache",
              s_at);
        } else if (cache == model::session_cache_kind::none ||
                   cache == model::session_cache_kind::off) {
          continue;  // TLS 1.2 only and nothing resumes: tls12-resumption-disabled's error
        } else {
          f = ctx.make(id, engine::severity::warning,
                       "`ssl_session_tickets off` in " + who +
                           " applies only in part: nginx copies its SSL options on SNI, but the "
                           "session cache and ticket keys come from the default server " +
                           dname + " of " + where_sockets,
                       s_at);
        }
        add_evidence(f, s);
        f.facts.push_back(setting_evidence(ctx, d, "ssl_session_tickets"));
        f.facts.back().name = "default server ssl_session_tickets";
        f.fix = "# in the http block, once for every server:\nssl_session_tickets " +
                std::string(d_tickets ? "on" : "off") + ";";
        f.server = who;
        out.push_back(std::move(f));
      }
    }
  }
}

}  // namespace

engine::rule tls13_resumption_disabled() {
  engine::rule r{id, engine::severity::error,
                 "TLS 1.3 with session tickets off and no session cache: no client can resume", doc,
                 check};
  r.confirmed_by = engine::probe_question::tls13_resumes;
  r.costs_resumption = true;
  return r;
}

}  // namespace ngxtls::rules
