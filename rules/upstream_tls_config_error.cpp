// upstream-tls-config-error: An upstream TLS setting nginx refuses at start.

#include <set>

#include "rules/upstream_tls.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "upstream-tls-config-error";

constexpr const char* doc = R"(# upstream-tls-config-error

## What it flags
The upstream TLS settings nginx refuses at start, for a `proxy_pass https://`, `grpc_pass
grpcs://` or `uwsgi_pass suwsgi://` location or a stream server with `proxy_ssl on`, each in
nginx's words (error):
- `proxy_ssl_verify on` without `proxy_ssl_trusted_certificate`: "no
  proxy_ssl_trusted_certificate for proxy_ssl_verify" (grpc and uwsgi name their own
  directives), also when `proxy_ssl_verify on` is set in `http` or `server` and inherited;
- `proxy_ssl_certificate` without `proxy_ssl_certificate_key` at the same level or above: 'no
  "proxy_ssl_certificate_key" is defined for certificate "FILE"';
- a `proxy_ssl_certificate` or `proxy_ssl_trusted_certificate` file that exists here and holds
  no certificate: 'cannot load certificate "FILE"'. A file missing on this machine is reported
  only with `--strict-files` (lint often runs where the files are not).
A location that proxies to plain `http://` sets up no upstream TLS and nginx checks nothing
there; a target whose scheme comes from a variable is checked by nginx but not by this rule.

## Why it matters
`nginx -t` fails and nginx does not start (or a reload is refused and the old config keeps
running).

## Example
```nginx
location / {
    proxy_pass https://api.internal;
    proxy_ssl_verify on;            # no proxy_ssl_trusted_certificate: nginx does not start
}
```

## Fix
```nginx
proxy_ssl_verify on;
proxy_ssl_trusted_certificate /etc/ssl/certs/internal-ca.pem;
```

## How the prober confirms it
Not yet: nginx reports these errors while it merges the location's settings, at the end of the
block it merges rather than at the directive this finding points at, so the sandbox's `nginx -t`
verdict, matched by file, line and column, does not answer it.

## Source
docs/nginx-facts.md#upstream-tls-errors, measured with `nginx -t` on nginx 1.22.1, 1.26.3 and
1.30.6 by tests/integration/test_nginx_upstream_tls.cpp ("nginx -t: the upstream TLS config
errors").
)";

/// The finding at `at` with nginx's `message`, once per directive.
void report(const engine::context& ctx, const model::tls_upstream& u, const config::directive* at,
            const std::string& message, const std::string& fix,
            std::set<const config::directive*>& seen, engine::finding_list& out) {
  if (!at || !seen.insert(at).second) return;
  auto f = ctx.make(id, engine::severity::error,
                    message + " (for " + upstream_place(ctx, u) + "): nginx will not start", at);
  add_target_evidence(ctx, u, f);
  f.fix = fix;
  out.push_back(std::move(f));
}

/// A certificate file of setting `suffix` that exists here and holds no certificate; a missing
/// one with --strict-files.
void check_file(const engine::context& ctx, const model::tls_upstream& u, std::string_view suffix,
                std::set<const config::directive*>& seen, engine::finding_list& out) {
  const auto* s = u.get(suffix);
  if (!s || s->is_default() || s->args.empty() || dynamic_path(s->first())) return;
  const std::string path = ctx.resolve(s->first());
  const auto& l = ctx.files().certificate(path);
  if (l.facts && !l.facts->empty()) return;
  if (l.missing && !ctx.options().strict_files) return;
  report(ctx, u, s->where(),
         "cannot load certificate \"" + path + "\"" +
             (l.missing         ? ": the file does not exist"
              : l.error.empty() ? ""
                                : ": " + l.error),
         "# " + u.directive(suffix) + " must name a PEM file of certificates nginx can read", seen,
         out);
}

void check(const engine::context& ctx, engine::finding_list& out) {
  std::set<const config::directive*> seen;
  for (const auto& u : ctx.model().tls_upstreams) {
    const auto* verify = u.get("ssl_verify");
    const auto* trusted = u.get("ssl_trusted_certificate");
    if (verify && verify->first() == "on" &&
        (!trusted || trusted->args.empty() || trusted->first().empty()))
      report(ctx, u, verify->where(),
             "no " + u.directive("ssl_trusted_certificate") + " for " + u.directive("ssl_verify"),
             u.directive("ssl_trusted_certificate") +
                 " /etc/ssl/certs/backend-ca.pem;  # the CA that issued the backend's certificate",
             seen, out);
    const auto* cert = u.get("ssl_certificate");
    const auto* key = u.get("ssl_certificate_key");
    if (cert && !cert->is_default() && !cert->args.empty() &&
        (!key || key->is_default() || key->args.empty()))
      report(ctx, u, cert->where(),
             "no \"" + u.directive("ssl_certificate_key") + "\" is defined for certificate \"" +
                 std::string(cert->first()) + "\"",
             u.directive("ssl_certificate_key") + " /etc/nginx/tls/client.key;  # the key of " +
                 std::string(cert->first()),
             seen, out);
    check_file(ctx, u, "ssl_certificate", seen, out);
    check_file(ctx, u, "ssl_trusted_certificate", seen, out);
  }
}

}  // namespace

engine::rule upstream_tls_config_error() {
  engine::rule r{id, engine::severity::error, "An upstream TLS setting nginx refuses at start", doc,
                 check};
  // nginx reports these at the end of the block it merges, not at the directive, so the
  // sandbox's nginx -t verdict (matched by file, line and column) cannot confirm them yet.
  r.confirmed_by = engine::probe_question::none;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
