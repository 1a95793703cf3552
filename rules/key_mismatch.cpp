// key-mismatch: an ssl_certificate_key that does not belong to its ssl_certificate.

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "key-mismatch";

constexpr const char* doc = R"(# key-mismatch

## What it flags
An `ssl_certificate_key` whose private key does not match the leaf of the `ssl_certificate`
it is paired with (nginx pairs them by position), or that is encrypted while no
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

void check(const engine::context& ctx, engine::finding_list& out) {
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl) continue;
    const bool has_password_file = s.get("ssl_password_file") != nullptr;
    for (const auto& c : certificates_of(ctx, s)) {
      if (!c.key || !c.chain) continue;
      const auto& l = ctx.files().key_match(c.path, c.key_path);
      if (!l.facts || !*l.facts) continue;  // matched, or unreadable (file-not-inspected)
      const std::string& reason = **l.facts;
      if (has_password_file && reason.find("encrypted") != std::string::npos) continue;
      auto f = ctx.make(id, engine::severity::error,
                        "ssl_certificate_key \"" + c.key_path + "\" for \"" + c.path +
                            "\": " + reason + ": nginx will not start",
                        c.key->where);
      f.facts.push_back(
          {"ssl_certificate", std::string(c.arg), "server", ctx.where(c.cert->where)});
      f.facts.push_back(
          {"ssl_certificate_key", std::string(c.key->args[0]), "server", ctx.where(c.key->where)});
      f.fix =
          "# pair each certificate with its own key, in the same order:\nssl_certificate     "
          "cert.pem;\n"
          "ssl_certificate_key cert.key;";
      f.server = server_label(ctx, s);
      out.push_back(std::move(f));
    }
  }
}

}  // namespace

engine::rule key_mismatch() {
  engine::rule r{id, engine::severity::error,
                 "Private key does not match its certificate (nginx will not start)", doc, check};
  r.confirmed_by = engine::probe_question::nginx_t_verdict;
  return r;
}

}  // namespace ngxtls::rules
