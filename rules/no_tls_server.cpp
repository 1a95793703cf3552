// no-tls-server: a run that found no TLS server at all, so that a clean result is never read
// as "TLS checked and fine".

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "no-tls-server";

constexpr const char* doc = R"(# no-tls-server

## What it flags
A configuration (a main nginx.conf, a site file, a snippet or a directory) in which no server
has a `listen ... ssl`, a `listen ... quic`, `ssl on`, a mail `starttls`, or an
`ssl_certificate` in effect. A note at the first line of the first file read; the report's
summary line says it as well.

## Why it matters
Every TLS rule looks at TLS servers. With none, nothing TLS was checked, and a report with no
finding would read as a clean pass on input that was never understood: the wrong file (the
plain-HTTP site instead of the TLS one), a snippet whose server lives elsewhere, or TLS set
up in an include that was not given.

## Example
```nginx
server {
    listen 80;
    server_name example.com;
    return 301 https://$host$request_uri;
}
```

## Fix
Lint the file or directory that holds the TLS servers (`ngxtls lint /etc/nginx` reads
nginx.conf and what it includes), or `nginx -T | ngxtls lint -`. Silence the note with
`--ignore no-tls-server` when the config is meant to serve plain HTTP only.

## How the prober confirms it
It needs none: the config holds no TLS listener to probe.

## Source
nginx enables TLS on a listening socket only with the `ssl` (or `quic`) parameter of
`listen`, or the `ssl on` directive before 1.25.1 (nginx documentation,
ngx_http_ssl_module, ngx_stream_ssl_module), and in mail also with `starttls`
(ngx_mail_ssl_module). Test: fixtures/rules/no-tls-server and
tests/integration/test_site_files.cpp.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (!m.cfg || m.cfg->files.empty() || m.cfg->root.empty()) return;  // empty-config's case
  for (const auto& s : m.servers)
    if (model::offers_tls(s)) return;
  const std::size_t n = m.cfg->files.size();
  engine::finding f;
  f.rule = id;
  f.level = engine::severity::note;
  f.message = "no `listen ... ssl`, `quic` or `ssl_certificate` in " + std::to_string(n) +
              (n == 1 ? " file" : " files") + ": nothing TLS was checked";
  f.location = {m.cfg->files.front().path, 1, 1};
  f.facts.push_back({"servers", std::to_string(m.servers.size()), "config", std::nullopt});
  out.push_back(std::move(f));
}

}  // namespace

engine::rule no_tls_server() {
  return {id, engine::severity::note, "No TLS server in the configuration: nothing TLS was checked",
          doc, check};
}

}  // namespace ngxtls::rules
