// tls12-resumption-disabled: a server that serves TLS 1.2 and no TLS 1.3, on a socket where no
// TLS 1.2 session can resume (no ticket that can be opened, no session cache).

#include <unordered_set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "tls12-resumption-disabled";

constexpr const char* doc = R"(# tls12-resumption-disabled

## What it flags
A TLS server that serves TLS 1.2 (or older) and no TLS 1.3, on a listen socket where no TLS 1.2
session can resume: session tickets are off for it and the socket's session cache (the
default server's `ssl_session_cache`) is `none` or `off` (nginx's default is `none`). No
client of any protocol can resume there: an error.
- The default server: its own `ssl_session_tickets off`, the old hardening advice
  (`ssl_protocols TLSv1.2; ssl_session_tickets off;` with no cache).
- A name-based server: with `ssl_session_tickets off` in it and on in the default server, its
  TLS 1.2 clients get no ticket (nginx copies the server's SSL options on SNI) and no cache
  holds their session IDs, on every version. From nginx 1.29.2 its own `ssl_protocols` decide
  whether it serves TLS 1.3; before, the default server's do.
Where TLS 1.3 is served, `tls13-resumption-disabled` reports the same socket (its message says
that TLS 1.2 clients cannot resume either); a name-based server with tickets on behind a
default server with tickets off, before 1.29.2, is reported there too.

## Why it matters
Without tickets a TLS 1.2 client can resume only by session ID, and a session ID resumes only
from the server's session cache. With none, every connection is a full handshake: more CPU
(about 9 times the cost of a resumed TLS 1.2 handshake here) and one more round trip for every
client, on every connection.

## Example
```nginx
server {
    listen 443 ssl;
    ssl_protocols TLSv1.2;
    ssl_session_tickets off;      # no ssl_session_cache: nothing can resume
}
```

## Fix
A `shared:` session cache in the socket's default server (better: in `http`, for every
server) lets session IDs resume, with tickets still off: `ssl_session_cache shared:SSL:10m;`
holds about 40,000 sessions. Or turn tickets on again, with `ssl_session_ticket_key` files that
every instance shares (`ticket-keys-not-shared`). `lint --fix` adds the cache.

## How the prober confirms it
`ngxtls probe --tls1.2` (and `ngxtls check`) run TLS 1.2 resumption by ticket and by session
ID: both 0%; with a shared cache both 100%.

## Source
docs/nginx-facts.md#tls12-resumption, measured on nginx 1.22.1, 1.26.3 and 1.30.6 by
tests/integration/test_nginx_versions.cpp ("TLS 1.2 only" cases, `ngxtls probe --tls1.2 -n 20`
at SNI a and b): tickets off and no cache: no ticket and 0/20 session IDs at both names on
every version; the same with `shared:` 20/20 session IDs; default server on and b off: nothing
resumes at b on every version; default server off and b on: nothing at b up to 1.26.3, 20/20 by
ticket on 1.30.6.
)";

// True when `s` serves TLS 1.2 and no TLS 1.3 with protocols `p_of` (its own, or the default
// server's where nginx negotiates with those).
bool tls12_only(const model::model& m, const model::server& p_of) {
  return model::protocols_enable(p_of.get("ssl_protocols"), "TLSv1.2") && !tls13_enabled(m, p_of);
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  const bool sni_before_resumption = m.versions.nginx >= model::version{1, 29, 2};
  for (const auto& [di, sockets] : ssl_sockets_by_default(m)) {
    const model::server& d = m.servers[di];
    const auto cache = model::cache_kind(d.get("ssl_session_cache"));
    if (cache != model::session_cache_kind::none && cache != model::session_cache_kind::off)
      continue;
    const bool d_tickets = model::is_on(d.get("ssl_session_tickets"));
    const std::string where_sockets = socket_names(sockets);
    const std::string cache_value(d.get("ssl_session_cache")->first());
    auto finish = [&](engine::finding& f, const model::server& s, const model::server& p_of) {
      for (const auto* k : sockets) f.ports.push_back(k->port);
      for (const char* n : {"ssl_protocols", "ssl_session_tickets"})
        f.facts.push_back(
            setting_evidence(ctx, n == std::string_view("ssl_protocols") ? p_of : s, n));
      f.facts.push_back(setting_evidence(ctx, d, "ssl_session_cache"));
      if (&s != &d) f.facts.back().name = "default server ssl_session_cache";
      f.fix = shared_cache_fix;
      f.server = server_label(ctx, s);
      out.push_back(std::move(f));
    };
    auto protocols_text = [&](const model::server& p_of) {
      const auto* p = p_of.get("ssl_protocols");
      std::string list;
      if (p)
        for (const auto& a : p->args()) list += (list.empty() ? "" : " ") + std::string(a);
      return !p || p->from == model::origin::nginx_default
                 ? "nginx " + m.versions.nginx.str() + "'s default ssl_protocols " + list
                 : "ssl_protocols " + list;
    };
    if (!d_tickets && tls12_only(m, d)) {
      const auto* at = d.get("ssl_session_tickets")->where();
      auto f = ctx.make(id, engine::severity::error,
                        "no client can resume on " + where_sockets + ": " + protocols_text(d) +
                            " serves no TLS 1.3, and with `ssl_session_tickets off` a TLS 1.2 "
                            "session resumes only from a session cache, while ssl_session_cache "
                            "is " +
                            cache_value + " (every connection is a full handshake)",
                        at ? at : default_anchor(d));
      add_shared_cache_edit(ctx, d, at, f);
      finish(f, d, d);
    }
    std::unordered_set<std::size_t> seen;
    for (const auto* k : sockets) {
      for (std::size_t si : k->servers) {
        if (si == di || !seen.insert(si).second) continue;
        const model::server& s = m.servers[si];
        // Only tickets off here behind tickets on in the default server: with both off the
        // socket's finding (this rule's or tls13-resumption-disabled's) covers every name, and
        // tickets on here behind off there is tls13-resumption-disabled's, on every protocol.
        if (model::is_on(s.get("ssl_session_tickets")) || !d_tickets) continue;
        const model::server& p_of = sni_before_resumption ? s : d;
        if (!tls12_only(m, p_of)) continue;
        const auto* at = s.get("ssl_session_tickets")->where();
        auto f = ctx.make(id, engine::severity::error,
                          "no client of " + server_label(ctx, s) + " can resume on " +
                              where_sockets + ": " + protocols_text(p_of) +
                              (&p_of == &d ? " (the default server's, which nginx " +
                                                 m.versions.nginx.str() + " negotiates with)"
                                           : std::string()) +
                              " serves no TLS 1.3, its `ssl_session_tickets off` leaves TLS 1.2 "
                              "sessions only the session cache, and the default server " +
                              server_label(ctx, d) +
                              ", whose cache serves the socket, has "
                              "ssl_session_cache " +
                              cache_value,
                          at ? at : default_anchor(s));
        finish(f, s, p_of);
      }
    }
  }
}

}  // namespace

engine::rule tls12_resumption_disabled() {
  engine::rule r{id, engine::severity::error,
                 "TLS 1.2 without TLS 1.3, session tickets off and no session cache: no client "
                 "can resume",
                 doc, check};
  r.confirmed_by = engine::probe_question::tls12_resumes;
  r.costs_resumption = true;
  return r;
}

}  // namespace ngxtls::rules
