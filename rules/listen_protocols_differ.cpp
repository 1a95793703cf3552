// listen-protocols-differ: servers on one listen socket whose `listen` lines differ in `ssl`,
// `http2` or `proxy_protocol`, which nginx ORs into one set for the whole socket.

#include <algorithm>
#include <array>
#include <string_view>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "listen-protocols-differ";

constexpr const char* doc = R"(# listen-protocols-differ

## What it flags
An http listen socket (one address:port) whose servers' `listen` lines differ in `ssl`,
`http2` or `proxy_protocol`. The finding points at the `listen` of each server that lacks a
flag another server on the socket sets. Warning for `ssl` and `proxy_protocol`, note for
`http2` alone.

## Why it matters
nginx keeps one set of protocol options per socket: each of `ssl`, `http2` and
`proxy_protocol` is on for every server of the socket as soon as one server's `listen` has
it. A server written as plain HTTP on a port where another server says `ssl` speaks TLS
(plain HTTP clients get "400 The plain HTTP request was sent to HTTPS port"); one server's
`proxy_protocol` makes every connection to the port start with a PROXY header; one
`http2` turns HTTP/2 on for every name. nginx 1.23.4 and later warn "protocol options
redefined" only when one of the differing `listen` lines also sets socket options
(`reuseport`, `backlog=`...); otherwise `nginx -t` is silent, and nginx 1.22 never warns.

## Example
```nginx
server { listen 8443 reuseport; server_name plain.example.com; }   # speaks TLS anyway
server { listen 8443 ssl;       server_name tls.example.com; ... }
```

## Fix
Write the same protocol flags on every `listen` of the socket, or give servers that need
other protocols their own port (or address):
```nginx
server { listen 8080; server_name plain.example.com; }
server { listen 8443 ssl; server_name tls.example.com; ... }
```

## How the prober confirms it
`ngxtls probe --sni plain.example.com HOST:8443` completes a TLS handshake for the server
written as plain HTTP.

## Source
Measured on Debian 12's 1.22.1, upstream 1.26.3 and Debian sid's 1.30.6 by
tests/integration/test_nginx_versions.cpp ("one server listens with reuseport and another with
ssl on one port", "one server listens plain and another with ssl on one port", "one server
listens with ssl and another with reuseport on one port", "one server listens with ssl and
another with ssl http2 on one port"): the socket speaks TLS, and HTTP/2 by ALPN, for both
servers on all three; `nginx -t` warns "protocol options redefined" on 1.26.3 and 1.30.6 in
the two cases with `reuseport`, never on 1.22.1. `proxy_protocol` is ORed the same way in
ngx_http_add_addresses (src/http/ngx_http.c, 1.22.1 and 1.26.3).
)";

// A `listen` parameter that sets a socket option: such a line carries the socket's options
// (`set` in ngx_http_core_listen), which is when nginx >= 1.23.4 warns about differing protocols.
bool socket_option(std::string_view arg) {
  for (std::string_view p : {"backlog=", "rcvbuf=", "sndbuf=", "accept_filter=", "fastopen=",
                             "ipv6only=", "so_keepalive=", "setfib="})
    if (arg.substr(0, p.size()) == p) return true;
  return arg == "reuseport" || arg == "deferred" || arg == "bind";
}

struct flags {
  bool ssl = false, http2 = false, proxy_protocol = false;
};

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  for (const auto& k : m.sockets) {
    if (k.context != model::context_kind::http || k.servers.size() < 2) continue;
    // Each server's flags on this socket (several listens of one server to it: ORed too), the
    // socket's union, and whether any of its listen lines sets socket options.
    std::vector<flags> per_server;
    std::vector<const model::listen_directive*> first_listen;
    flags any;
    bool options_set = false;
    for (std::size_t si : k.servers) {
      flags f;
      const model::listen_directive* first = nullptr;
      for (const auto& l : m.servers[si].listens) {
        // A quic listen is on the UDP socket of its address, not on the TCP one.
        if (l.address != k.address || l.port != k.port || l.quic != k.quic) continue;
        if (!first) first = &l;
        f.ssl = f.ssl || l.ssl;
        f.http2 = f.http2 || l.http2;
        f.proxy_protocol = f.proxy_protocol || l.proxy_protocol;
        if (l.where)
          for (std::size_t i = 1; i < l.where->args.size(); ++i)
            options_set = options_set || socket_option(l.where->args[i].value());
      }
      any.ssl = any.ssl || f.ssl;
      any.http2 = any.http2 || f.http2;
      any.proxy_protocol = any.proxy_protocol || f.proxy_protocol;
      per_server.push_back(f);
      first_listen.push_back(first);
    }
    // The first two servers (positions in k.servers) that set each flag; none: size().
    struct first_two {
      std::array<std::size_t, 2> ssl, proxy_protocol, http2;
    } holders;
    holders.ssl.fill(k.servers.size());
    holders.proxy_protocol.fill(k.servers.size());
    holders.http2.fill(k.servers.size());
    auto note = [](std::array<std::size_t, 2>& h, std::size_t o) {
      if (o < h[0])
        h = {o, h[0]};
      else if (o < h[1] && o != h[0])
        h[1] = o;
    };
    for (std::size_t o = 0; o < per_server.size(); ++o) {
      if (per_server[o].ssl) note(holders.ssl, o);
      if (per_server[o].proxy_protocol) note(holders.proxy_protocol, o);
      if (per_server[o].http2) note(holders.http2, o);
    }
    for (std::size_t n = 0; n < k.servers.size(); ++n) {
      const flags& f = per_server[n];
      std::string missing;
      bool serious = false;
      auto add = [&](bool socket_has, bool server_has, const char* name, bool grave) {
        if (!socket_has || server_has) return;
        missing += missing.empty() ? "" : ", ";
        missing += name;
        serious = serious || grave;
      };
      add(any.ssl, f.ssl, "ssl", true);
      add(any.proxy_protocol, f.proxy_protocol, "proxy_protocol", true);
      add(any.http2, f.http2, "http2", false);
      if (missing.empty()) continue;
      const model::server& s = m.servers[k.servers[n]];
      // Who sets the flags this server lacks: the first other server that does (from the
      // first two holders of each flag: a scan of the socket per server was quadratic).
      std::size_t first_setter = k.servers.size();
      auto consider = [&](bool lacks, const std::array<std::size_t, 2>& holders) {
        if (!lacks) return;
        for (std::size_t o : holders)
          if (o != n) {
            first_setter = std::min(first_setter, o);
            break;
          }
      };
      consider(!f.ssl, holders.ssl);
      consider(!f.proxy_protocol, holders.proxy_protocol);
      consider(!f.http2, holders.http2);
      const std::string setter = first_setter < k.servers.size()
                                     ? server_label(ctx, m.servers[k.servers[first_setter]])
                                     : std::string();
      const bool warns = options_set && m.versions.nginx >= model::version{1, 23, 4};
      const config::directive* at =
          first_listen[n] && first_listen[n]->where ? first_listen[n]->where : default_anchor(s);
      auto fnd = ctx.make(id, serious ? engine::severity::warning : engine::severity::note,
                          server_label(ctx, s) + " listens on " + k.name() + " without " + missing +
                              ", but " + setter + " sets it on the same socket: nginx applies " +
                              missing + " to every server of the socket, this one included" +
                              (warns ? " (nginx -t warns \"protocol options redefined\")"
                                     : " (nginx -t does not warn about it here)"),
                          at);
      std::string socket_flags;
      for (const auto& [on, name] : {std::pair{any.ssl, "ssl"}, std::pair{any.http2, "http2"},
                                     std::pair{any.proxy_protocol, "proxy_protocol"}})
        if (on) socket_flags += (socket_flags.empty() ? "" : " ") + std::string(name);
      fnd.facts.push_back({"socket protocol flags", socket_flags, "listen", std::nullopt});
      fnd.fix = "# the same flags on every listen of " + k.name() +
                ", or another port for this server:\nlisten " + std::to_string(k.port) +
                (any.ssl ? " ssl" : "") + (any.proxy_protocol ? " proxy_protocol" : "") + ";";
      fnd.server = server_label(ctx, s);
      fnd.ports.push_back(k.port);
      // A server written without ssl shows the socket's ssl in a handshake under its name;
      // http2 and proxy_protocol alone only nginx -t's warning can show.
      if (!any.ssl || f.ssl) fnd.question = engine::probe_question::socket_options_warned;
      out.push_back(std::move(fnd));
    }
  }
}

}  // namespace

engine::rule listen_protocols_differ() {
  engine::rule r{
      id, engine::severity::warning,
      "Servers on one socket differ in listen ssl/http2/proxy_protocol, which nginx applies to "
      "all of them",
      doc, check};
  r.confirmed_by = engine::probe_question::handshake_under_name;
  return r;
}

}  // namespace ngxtls::rules
