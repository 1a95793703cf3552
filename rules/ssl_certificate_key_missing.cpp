// ssl-certificate-key-missing: an ssl_certificate without its ssl_certificate_key, which
// nginx refuses at start-up.

#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "ssl-certificate-key-missing";

constexpr const char* doc = R"(# ssl-certificate-key-missing

## What it flags
An `ssl_certificate` in effect in a server with fewer `ssl_certificate_key` directives than
certificates (nginx pairs the n-th certificate with the n-th key). An error at the
certificate that has no key.
- http: every server, TLS or not: nginx checks the pairs when it merges a server's settings.
- stream and mail: servers that enable TLS (`listen ... ssl`; in mail also `starttls`).

## Why it matters
nginx refuses to start: `nginx -t` says `no "ssl_certificate_key" is defined for certificate
"PATH"` (http), or `no "ssl_certificate_key" is defined for the "listen ... ssl" directive in
FILE:LINE` (stream, mail).

## Example
```nginx
server {
    listen 443 ssl;
    ssl_certificate /etc/ssl/example.com/fullchain.pem;
}
```

## Fix
```nginx
ssl_certificate_key /etc/ssl/example.com/privkey.pem;
```

## How the prober confirms it
It cannot: nginx does not start. `check --sandbox` reports nginx -t's verdict.

## Source
Measured with `nginx -t` on nginx 1.22.1 (Debian), 1.26.3 and 1.30.6: nginx
src/http/modules/ngx_http_ssl_module.c, src/stream/ngx_stream_ssl_module.c and
src/mail/ngx_mail_ssl_module.c (merge_conf). Test: fixtures/rules/ssl-certificate-key-missing
and tests/integration/test_site_files.cpp.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  std::set<const config::directive*> done;
  for (const auto& s : m.servers) {
    const auto* certs = s.get("ssl_certificate");
    if (!certs || certs->values.empty()) continue;
    if (s.context != model::context_kind::http && !s.has_ssl) continue;
    const auto* keys = s.get("ssl_certificate_key");
    const std::size_t n_keys = keys ? keys->values.size() : 0;
    if (n_keys >= certs->values.size()) continue;
    const model::occurrence& cert = certs->values[n_keys];
    if (!cert.where || !done.insert(cert.where).second) continue;
    const std::string path(cert.args.empty() ? std::string_view() : cert.args.front());
    bool ssl_listen = false;
    for (const auto& l : s.listens) ssl_listen = ssl_listen || l.ssl;
    std::string message =
        s.context == model::context_kind::http
            ? "no \"ssl_certificate_key\" is defined for certificate \"" + path + "\""
            : "no \"ssl_certificate_key\" is defined for the \"" +
                  std::string(s.starttls && !ssl_listen ? "starttls" : "listen ... ssl") +
                  "\" directive (certificate \"" + path + "\")";
    message += ": nginx refuses to start";
    auto f = ctx.make(id, engine::severity::error, message, cert.where);
    f.facts.push_back(setting_evidence(ctx, s, "ssl_certificate"));
    f.facts.push_back(setting_evidence(ctx, s, "ssl_certificate_key"));
    f.fix = "ssl_certificate_key /etc/ssl/SITE/privkey.pem;";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule ssl_certificate_key_missing() {
  return {id, engine::severity::error,
          "ssl_certificate without its ssl_certificate_key: nginx refuses to start", doc, check};
}

}  // namespace ngxtls::rules
