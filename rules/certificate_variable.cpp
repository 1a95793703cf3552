// certificate-variable: a certificate or key chosen by a variable, which lint cannot read.

#include "rules/common.hpp"
#include "rules/variables.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "certificate-variable";

constexpr const char* doc = R"(# certificate-variable

## What it flags
An `ssl_certificate` or `ssl_certificate_key` whose path holds a variable
(`/etc/ssl/$ssl_server_name.crt`):
- in `http` and `stream`, a note: nginx loads the file per handshake, so lint cannot say which
  file it is and the certificate checks (expiry, key size, key match, chain, names, stapling)
  did not run on it; a variable nginx does not know is `certificate-variable-unknown` instead;
- in `mail`, a warning: the mail module does not expand variables, so nginx loads a file named
  literally `/etc/ssl/$ssl_server_name.crt` and refuses to start when there is none
  (`cannot load certificate`).

## Why it matters
A lint that says nothing about a certificate it could not read reads as "certificates fine".
The note says what was not checked, so the operator knows to probe the served certificates
(`ngxtls probe HOST --sni NAME`).

## Example
```nginx
ssl_certificate     /etc/ssl/$ssl_server_name/fullchain.pem;
ssl_certificate_key /etc/ssl/$ssl_server_name/privkey.pem;
```

## Fix
Nothing to fix in http and stream: probe each name to check the certificate it gets. In mail,
name the file: `ssl_certificate /etc/ssl/mail.example.com/fullchain.pem;`.

## How the prober confirms it
`ngxtls probe HOST --sni NAME` reads the certificate served under each name.

## Source
docs/nginx-facts.md#unknown-variable: nginx's documentation of `ssl_certificate` (with a
variable the file is loaded on each handshake; http and stream of nginx 1.22.1, 1.26.3 and
1.30.6 compile the variables, as `unknown "foo" variable` shows); mail measured with
`nginx -t` on nginx 1.22.1 with Debian's mail module (`cannot load certificate
"/tmp/$foo.pem"`), and nginx src/mail/ngx_mail_ssl_module.c (ngx_ssl_certificates, no
variables). Tests: fixtures/rules/certificate-variable.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (!m.cfg) return;
  for (const auto& block : m.cfg->root) {
    if (!block.has_block ||
        (block.name != "http" && block.name != "stream" && block.name != "mail"))
      continue;
    const bool mail = block.name == "mail";
    const auto kind = block.name == "http"     ? model::context_kind::http
                      : block.name == "stream" ? model::context_kind::stream
                                               : model::context_kind::mail;
    walk(block.block, [&](const config::directive& d) {
      if ((d.name != "ssl_certificate" && d.name != "ssl_certificate_key") || d.args.empty())
        return;
      const std::string_view path = d.args[0].value();
      const auto names = referenced_variables(path);
      if (names.empty() && path.find('$') == std::string_view::npos) return;
      const std::string what = d.name == "ssl_certificate" ? "certificate" : "key";
      if (!mail) {
        // An unknown variable is the error of certificate-variable-unknown.
        const auto& vars = variables_of(ctx, block);
        for (const auto& n : names)
          if (!vars.known(n, kind)) return;
      }
      auto f =
          mail ? ctx.make(id, engine::severity::warning,
                          "mail does not expand variables: nginx loads a " + what +
                              " file named literally \"" + std::string(path) +
                              "\" and refuses to start when there is none",
                          &d)
               : ctx.make(id, engine::severity::note,
                          what + " \"" + std::string(path) +
                              "\" is chosen per handshake by a variable: lint cannot read it, "
                              "so the certificate checks (expiry, key, chain, names) did not run "
                              "on it",
                          &d);
      f.facts.push_back(
          {std::string(d.name.view()), std::string(path), model::to_string(kind), ctx.where(&d)});
      f.fix = mail ? std::string(d.name.view()) + " /etc/ssl/mail.example.com/" +
                         (what == "key" ? "privkey.pem;" : "fullchain.pem;")
                   : "# ngxtls probe HOST --sni NAME   (reads the certificate served for NAME)";
      out.push_back(std::move(f));
    });
  }
}

}  // namespace

engine::rule certificate_variable() {
  return {id, engine::severity::note,
          "Certificate or key chosen by a variable: lint cannot read it", doc, check};
}

}  // namespace ngxtls::rules
