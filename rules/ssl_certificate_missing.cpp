// ssl-certificate-missing: a TLS listener whose server has no ssl_certificate, which nginx
// refuses at start-up.

#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "ssl-certificate-missing";

constexpr const char* doc = R"(# ssl-certificate-missing

## What it flags
A `listen ... ssl` (or `quic`) whose server has no `ssl_certificate`, set in the server or
inherited from the enclosing block. An error at the listen. nginx checks it per listening
socket:
- http: the socket's default server needs a certificate unless it has
  `ssl_reject_handshake on`; when it rejects handshakes, every other server on the socket
  needs one (or `ssl_reject_handshake on` too). A name-based server without a certificate
  behind a default server with one is accepted (it answers with the default's certificate).
- stream: every server with a `listen ... ssl`.
- mail: every server with a `listen ... ssl`, `starttls on|only`, or `ssl on` (nginx before
  1.25.1).

## Why it matters
nginx refuses to start (or reload): `nginx -t` says `no "ssl_certificate" is defined for
the "listen ... ssl" directive in FILE:LINE` (the line of the server block; in mail the
`starttls` or `ssl` directive's name replaces `listen ... ssl`). A site file that moves its
certificate into a snippet and forgets the include breaks every site on the host at the next
reload.

## Example
```nginx
server {
    listen 443 ssl;
    server_name example.com;
    # include snippets/ssl-example.com.conf;   (commented out: no certificate)
}
```

## Fix
```nginx
ssl_certificate     /etc/ssl/example.com/fullchain.pem;
ssl_certificate_key /etc/ssl/example.com/privkey.pem;
```
Or, for a default server that only refuses unknown names, `ssl_reject_handshake on;`.

## How the prober confirms it
It cannot: nginx does not start. `check --sandbox` reports nginx -t's verdict.

## Source
Measured with `nginx -t` on nginx 1.22.1 (Debian), 1.26.3 and 1.30.6 (the messages are the
same): nginx src/http/modules/ngx_http_ssl_module.c (ngx_http_ssl_init),
src/stream/ngx_stream_ssl_module.c and src/mail/ngx_mail_ssl_module.c (merge_conf). Test:
fixtures/rules/ssl-certificate-missing and tests/integration/test_site_files.cpp (nginx -t
on each case).
)";

bool has_certificate(const model::server& s) {
  const auto* c = s.get("ssl_certificate");
  return c && !c->values.empty();
}

// The listen of `s` on socket `k` that enables TLS there (else its first TLS listen).
const model::listen_directive* tls_listen(const model::server& s, const model::listen_socket* k) {
  const model::listen_directive* any = nullptr;
  for (const auto& l : s.listens) {
    if (!(l.ssl || l.quic) || !l.where) continue;
    if (!any) any = &l;
    if (k && l.address == k->address && l.port == k->port && l.quic == k->quic) return &l;
  }
  return any;
}

void report(const engine::context& ctx, const model::server& s, const config::directive* at,
            const std::string& what, engine::finding_list& out) {
  const std::string server_at = to_string(ctx.where(s.where));
  auto f = ctx.make(id, engine::severity::error,
                    "no \"ssl_certificate\" is defined for the \"" + what +
                        "\" directive: nginx refuses to start (nginx -t names the server at " +
                        server_at + ")",
                    at ? at : default_anchor(s));
  f.facts.push_back(setting_evidence(ctx, s, "ssl_certificate"));
  f.fix =
      "ssl_certificate     /etc/ssl/SITE/fullchain.pem;\nssl_certificate_key "
      "/etc/ssl/SITE/privkey.pem;";
  f.server = server_label(ctx, s);
  out.push_back(std::move(f));
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  std::set<std::size_t> done;
  // http: per socket, as ngx_http_ssl_init walks the addresses.
  for (const auto& k : m.sockets) {
    if (k.context != model::context_kind::http) continue;
    bool tls = false;
    for (std::size_t si : k.servers)
      for (const auto& l : m.servers[si].listens)
        if ((k.quic ? l.quic : l.ssl) && l.address == k.address && l.port == k.port) tls = true;
    if (!tls) continue;
    const model::server& d = m.servers[k.default_server];
    if (has_certificate(d)) continue;
    auto name_of = [&](const model::server& s) {
      const auto* l = tls_listen(s, &k);
      return std::string(l && l->quic && !l->ssl ? "listen ... quic" : "listen ... ssl");
    };
    if (!model::is_on(d.get("ssl_reject_handshake"))) {
      if (done.insert(k.default_server).second) {
        const auto* l = tls_listen(d, &k);
        report(ctx, d, l ? l->where : nullptr, name_of(d), out);
      }
      continue;
    }
    for (std::size_t si : k.servers) {
      const model::server& s = m.servers[si];
      if (si == k.default_server || has_certificate(s) ||
          model::is_on(s.get("ssl_reject_handshake")))
        continue;
      if (!done.insert(si).second) continue;
      const auto* l = tls_listen(s, &k);
      report(ctx, s, l ? l->where : nullptr, name_of(s), out);
    }
  }
  // stream and mail: per server, as their merge functions check.
  for (std::size_t si = 0; si < m.servers.size(); ++si) {
    const model::server& s = m.servers[si];
    if (s.context == model::context_kind::http || has_certificate(s)) continue;
    if (const auto* l = tls_listen(s, nullptr); l && l->ssl) {
      report(ctx, s, l->where, "listen ... ssl", out);
    } else if (s.context == model::context_kind::mail && s.starttls) {
      report(ctx, s, s.starttls, "starttls", out);
    } else if (s.context == model::context_kind::mail && s.has_ssl) {
      report(ctx, s, anchor_of(s, "ssl"), "ssl", out);
    }
  }
}

}  // namespace

engine::rule ssl_certificate_missing() {
  return {id, engine::severity::error,
          "TLS listener without ssl_certificate: nginx refuses to start", doc, check};
}

}  // namespace ngxtls::rules
