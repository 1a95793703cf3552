// certificate-expiry: a certificate that has expired, is not yet valid, or expires within the
// window set by `.ngxtls.toml` expiry_days (default 30).

#include <ctime>

#include "rules/upstream_tls.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "certificate-expiry";

constexpr const char* doc = R"(# certificate-expiry

## What it flags
A certificate in an `ssl_certificate` file (the leaf or any chain certificate in it), or in a
`proxy_ssl_certificate`, `grpc_ssl_certificate` or `uwsgi_ssl_certificate` file (the client
certificate nginx presents to a TLS upstream), that
- has expired, or is not valid yet: error;
- expires within the window, 30 days unless `.ngxtls.toml` says `expiry_days = N`: warning.

## Why it matters
An expired leaf or intermediate makes every client refuse the handshake. nginx starts and
serves it without complaint. Automated renewal fails quietly more often than anyone expects
(a moved webroot, a rate limit, a DNS change): the window gives time to notice.

## Example
```nginx
ssl_certificate /etc/nginx/tls/example.com.pem;   # notAfter in 9 days
```

## Fix
Renew the certificate (`certbot renew`, your ACME client, your CA), deploy it and reload
nginx: `nginx -s reload` (a reload reads certificate files again).

## How the prober confirms it
`ngxtls probe HOST` reports the served certificate's days to expiry: a reload may be all that
is missing when the file is renewed but nginx still serves the old one.

## Source
RFC 5280 section 4.1.2.5 (validity); nginx reads certificate files only at start and reload
(ngx_ssl_certificate).
)";

/// The findings of certificate file `c` (each certificate in it), for `server`; `refused_by`
/// names who checks it ("clients", or the backends that ask for a client certificate).
void check_certificate(const engine::context& ctx, const certificate_ref& c,
                       const std::string& server, std::int64_t now, std::int64_t window,
                       const std::string& refused_by, engine::finding_list& out) {
  const auto* chain = c.chain;
  if (!chain) return;
  for (std::size_t i = 0; i < chain->size(); ++i) {
    const auto& cert = (*chain)[i];
    const std::string which =
        i == 0 ? "certificate"
               : "chain certificate " + std::to_string(i) + " (" + cert.subject + ")";
    engine::severity level;
    std::string message;
    if (cert.not_after_unix < now) {
      level = engine::severity::error;
      const auto days = (now - cert.not_after_unix) / 86400;
      message = which + " in \"" + c.path + "\" expired " + std::to_string(days) +
                (days == 1 ? " day" : " days") + " ago: " + refused_by + " refuse the handshake";
    } else if (cert.not_before_unix > now) {
      level = engine::severity::error;
      message = which + " in \"" + c.path + "\" is not valid yet (notBefore in " +
                std::to_string((cert.not_before_unix - now) / 86400 + 1) + " days)";
    } else if (cert.not_after_unix - now < window) {
      level = engine::severity::warning;
      message = which + " in \"" + c.path + "\" expires in " +
                std::to_string((cert.not_after_unix - now) / 86400) +
                " days (window: " + std::to_string(ctx.options().expiry_window_days) + " days)";
    } else {
      continue;
    }
    auto f = ctx.make(id, level, message, c.cert->where);
    f.facts.push_back({"subject", cert.subject, "certificate", std::nullopt});
    f.facts.push_back({"days to expiry", std::to_string((cert.not_after_unix - now) / 86400),
                       "certificate", std::nullopt});
    f.fix = "# renew, then reload nginx so it reads the new file:\nnginx -s reload";
    f.server = server;
    out.push_back(std::move(f));
  }
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  const std::int64_t window = static_cast<std::int64_t>(ctx.options().expiry_window_days) * 86400;
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl) continue;
    for (const auto& c : certificates_of(ctx, s))
      check_certificate(ctx, c, server_label(ctx, s), now, window, "clients", out);
  }
  // The client certificates nginx presents to its TLS upstreams.
  for (const auto& c : upstream_certificates(ctx))
    check_certificate(ctx, c.ref, c.place, now, window, "backends that verify client certificates",
                      out);
}

}  // namespace

engine::rule certificate_expiry() {
  return {id, engine::severity::error,
          "Certificate expired, not yet valid, or expiring within the window", doc, check};
}

}  // namespace ngxtls::rules
