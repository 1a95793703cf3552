// certificate-variable-unknown: an ssl_certificate or ssl_certificate_key path that names a
// variable nginx does not know, which nginx refuses at start-up.

#include <set>

#include "rules/common.hpp"
#include "rules/variables.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "certificate-variable-unknown";

constexpr const char* doc = R"(# certificate-variable-unknown

## What it flags
An `ssl_certificate` or `ssl_certificate_key` in an `http` or `stream` block (the block itself
or any server in it) whose path names a variable nginx does not know there. Error, at the
directive, one per variable.

A variable is known when nginx has it built in for that block (`$ssl_server_name`, `$host`,
`$http_*`, `$cookie_*`, ...: measured on nginx 1.22.1, 1.26.3 and 1.30.6; `$host` and `$http_*`
are http only) or the configuration makes it in the same block: `map`, `geo`,
`split_clients`, `set` (in any server or location: nginx registers the name for the whole
block), `perl_set`, `js_set`, `auth_request_set`, `set_by_lua*`, a named regex capture
(`server_name ~^(?<sub>.+)\.example\.com$`), or an argument of a directive nginx's table does
not hold (a third-party module may make it). A variable made only in another block (a stream
`map` for an http certificate) is unknown. When the configuration loads (or `.ngxtls.toml`
declares) a module whose variables were not measured (anything but stream, mail, lua and ndk),
no variable is called unknown.

## Why it matters
nginx refuses to start (or reload): `nginx -t` says `unknown "foo" variable`, without a file or
line, after reading the whole configuration, so the operator has to search for it. It happens
with a map renamed in one file and not in another, or a certificate path copied from a
template (`$domain`) whose `set` or `map` stayed behind.

## Example
```nginx
server {
    listen 443 ssl;
    ssl_certificate     /etc/ssl/$domain/fullchain.pem;   # nothing defines $domain
    ssl_certificate_key /etc/ssl/$domain/privkey.pem;
}
```

## Fix
```nginx
map $ssl_server_name $domain {
    default example.com;
}
```
or use a built-in variable (`$ssl_server_name`), or a fixed path.

## How the prober confirms it
It cannot: nginx does not start. `check --sandbox` reports nginx -t's verdict.

## Source
docs/nginx-facts.md#unknown-variable: measured with `nginx -t` on nginx 1.22.1 (Debian, with its
stream module), 1.26.3 and 1.30.6 (the message is the same), and the built-in names measured by
tools/probe_variable_names.py on the same binaries. Tests: fixtures/rules/certificate-variable-unknown
and tests/integration/test_site_files.cpp "a certificate path with a variable nginx does not
know ...".
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (!m.cfg) return;
  for (const auto& block : m.cfg->root) {
    if (!block.has_block || (block.name != "http" && block.name != "stream")) continue;
    const auto kind =
        block.name == "http" ? model::context_kind::http : model::context_kind::stream;
    const defined_variables* vars = nullptr;  // worked out at the first variable path
    walk(block.block, [&](const config::directive& d) {
      if ((d.name != "ssl_certificate" && d.name != "ssl_certificate_key") || d.args.empty())
        return;
      const auto names = referenced_variables(d.args[0].value());
      if (names.empty()) return;
      if (!vars) vars = &variables_of(ctx, block);
      std::set<std::string> reported;
      for (const auto& n : names) {
        if (vars->known(n, kind) || !reported.insert(n).second) continue;
        auto f = ctx.make(id, engine::severity::error,
                          "unknown \"" + n + "\" variable: nginx refuses to start (nginx -t " +
                              "names no file or line for it); nothing in this " +
                              std::string(block.name.view()) + " block defines $" + n,
                          &d);
        f.facts.push_back({std::string(d.name.view()), std::string(d.args[0].value()),
                           model::to_string(kind), ctx.where(&d)});
        f.fix = "map $ssl_server_name $" + n + " {\n    default example.com;\n}";
        out.push_back(std::move(f));
      }
    });
  }
}

}  // namespace

engine::rule certificate_variable_unknown() {
  engine::rule r{id, engine::severity::error,
                 "Certificate or key path names a variable nginx does not know: nginx refuses "
                 "to start",
                 doc, check};
  r.confirmed_by = engine::probe_question::nginx_t_verdict;
  return r;
}

}  // namespace ngxtls::rules
