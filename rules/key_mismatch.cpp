// key-mismatch: an ssl_certificate_key that does not belong to its ssl_certificate.

#include "rules/upstream_tls.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "key-mismatch";

constexpr const char* doc = R"(# key-mismatch

## What it flags
An `ssl_certificate_key` whose private key does not match the leaf of the `ssl_certificate`
it is paired with (nginx pairs them by position), or a `proxy_ssl_certificate_key` (grpc,
uwsgi) that does not match its `proxy_ssl_certificate`, the client certificate nginx presents
to a TLS upstream, or that is encrypted while no
`ssl_password_file` is set, or that OpenSSL cannot parse. Error. Files that are not readable
here are left to `file-not-inspected`. The key's bytes are never printed.

## Why it matters
nginx refuses to start: `SSL_CTX_use_PrivateKey("...") failed (SSL: error:05800074:x509
certificate routines::key values mismatch)`; an encrypted key without a password file makes
nginx prompt on the terminal at start, which hangs unattended starts. The usual cause is a
renewal that replaced one file of the pair.

## Example
```nginx
ssl_certificate     /etc/nginx/tls/new.pem;
ssl_certificate_key /etc/nginx/tls/old.key;
```

## Fix
Pair the certificate with the key it was issued for; compare
`openssl x509 -noout -pubkey -in CERT` with `openssl pkey -pubout -in KEY`.

## How the prober confirms it
It cannot: nginx does not start (`nginx -t` fails).

## Source
nginx src/event/ngx_event_openssl.c, ngx_ssl_certificate: SSL_CTX_use_PrivateKey, which checks
the key against the certificate (X509_check_private_key); ssl_password_file (nginx docs).
)";

/// The finding of certificate `c` when its key does not match: `cert_name` / `key_name` are the
/// directives ("ssl_certificate", "proxy_ssl_certificate", ...).
void check_pair(const engine::context& ctx, const certificate_ref& c, bool has_password_file,
                const std::string& cert_name, const std::string& key_name,
                const std::string& server, engine::finding_list& out) {
  if (!c.key || !c.chain) return;
  const auto& l = ctx.files().key_match(c.path, c.key_path);
  if (!l.facts || !*l.facts) return;  // matched, or unreadable (file-not-inspected)
  const std::string& reason = **l.facts;
  if (has_password_file && reason.find("encrypted") != std::string::npos) return;
  auto f = ctx.make(id, engine::severity::error,
                    key_name + " \"" + c.key_path + "\" for \"" + c.path + "\": " + reason +
                        ": nginx will not start",
                    c.key->where);
  f.facts.push_back({cert_name, std::string(c.arg), "server", ctx.where(c.cert->where)});
  f.facts.push_back({key_name, std::string(c.key->args[0]), "server", ctx.where(c.key->where)});
  f.fix = "# pair each certificate with its own key, in the same order:\n" + cert_name +
          "     cert.pem;\n" + key_name + " cert.key;";
  f.server = server;
  out.push_back(std::move(f));
}

void check(const engine::context& ctx, engine::finding_list& out) {
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl) continue;
    const bool has_password_file = s.get("ssl_password_file") != nullptr;
    for (const auto& c : certificates_of(ctx, s))
      check_pair(ctx, c, has_password_file, "ssl_certificate", "ssl_certificate_key",
                 server_label(ctx, s), out);
  }
  // The client certificates nginx presents to its TLS upstreams.
  for (const auto& c : upstream_certificates(ctx))
    check_pair(ctx, c.ref, c.password_file, c.directive, c.key_directive, c.place, out);
}

}  // namespace

engine::rule key_mismatch() {
  engine::rule r{id, engine::severity::error,
                 "Private key does not match its certificate (nginx will not start)", doc, check};
  r.confirmed_by = engine::probe_question::nginx_t_verdict;
  return r;
}

}  // namespace ngxtls::rules
