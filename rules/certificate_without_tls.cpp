// certificate-without-tls: a stream or mail server with its own certificate whose listens
// have no `ssl` (and, in mail, no STARTTLS): the certificate is never used.

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "certificate-without-tls";

constexpr const char* doc = R"(# certificate-without-tls

## What it flags
A `stream` or `mail` server that sets `ssl_certificate` and `ssl_certificate_key` in its own
block while none of its `listen` lines has `ssl` (and, in mail, `starttls` is off): a warning at
the first listen. nginx takes the config (`nginx -t` passes) and serves the port in plaintext;
the certificate is never used. Certificates set in the `stream` or `mail` block for every
server are not flagged: a plain server beside TLS ones is normal there. http servers are not
flagged either: a certificate in a plain http server is common (a port 80 server that shares
an include with its TLS twin).

## Why it matters
The operator meant TLS on that port (a TLS port such as MQTT's 8883, a certificate in the
server), and clients that speak TLS fail (`wrong version number`), or worse, clients that fall
back send credentials in the clear.

## Example
```nginx
stream {
    server {
        listen 8883;                       # no ssl: plaintext
        proxy_pass 127.0.0.1:1883;
        ssl_certificate     /etc/ssl/mqtt.pem;
        ssl_certificate_key /etc/ssl/mqtt.key;
    }
}
```

## Fix
```nginx
listen 8883 ssl;
```
(in mail, `listen 993 ssl;` for implicit TLS, or `starttls on;` on the plain port).

## How the prober confirms it
`openssl s_client -connect HOST:8883` fails with `wrong version number`: the port answers in
plaintext.

## Source
Measured on nginx 1.22.1 (Debian's stream module) and 1.26.3: `nginx -t` passes and a TLS
client gets `wrong version number` (tests/integration/test_site_files.cpp "a stream server
with a certificate and no listen ssl serves plaintext").
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  for (const auto& s : ctx.model().servers) {
    if (s.context == model::context_kind::http || s.has_ssl || s.listens.empty()) continue;
    const auto* cert = s.get("ssl_certificate");
    const auto* key = s.get("ssl_certificate_key");
    if (!cert || !key || cert->from != model::origin::server) continue;
    const config::directive* at = s.listens.front().where;
    if (!at) continue;
    const bool mail = s.context == model::context_kind::mail;
    auto f = ctx.make(id, engine::severity::warning,
                      std::string("this ") + (mail ? "mail" : "stream") +
                          " server has its own ssl_certificate, but no listen of it has `ssl`" +
                          (mail ? " and starttls is off" : "") +
                          ": the certificate is never used and the port runs in plaintext",
                      at);
    f.facts.push_back(setting_evidence(ctx, s, "ssl_certificate"));
    f.fix = mail ? "listen 993 ssl;  # or starttls on; on the plain port" : "listen PORT ssl;";
    f.server = server_label(ctx, s);
    for (const auto& l : s.listens) f.ports.push_back(l.port);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule certificate_without_tls() {
  return {id, engine::severity::warning,
          "A stream or mail server with a certificate but no TLS listen: plaintext", doc, check};
}

}  // namespace ngxtls::rules
