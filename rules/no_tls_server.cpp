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

A configuration where nginx is only a TLS client (a plain-HTTP front whose locations proxy to
`https://`, `grpcs://` or `suwsgi://` backends, or stream servers with `proxy_ssl on`) gets the
note too, saying what was checked: those upstream connections (`upstream-tls-per-request`,
`upstream-session-reuse-off`, `upstream-not-verified`, `upstream-sni-missing`,
`upstream-tls-config-error`, and the certificate rules on `proxy_ssl_certificate`), not nginx's
own listeners.

## Why it matters
Every TLS rule but the upstream ones looks at TLS servers. With none, nothing TLS was checked, and a report with no
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
(ngx_mail_ssl_module). Test: fixtures/rules/no-tls-server (upstream-only.conf: nginx as a
TLS client only) and
tests/integration/test_site_files.cpp.
)";

// "proxy_pass https://", "grpc_pass grpcs://", "stream proxy_ssl": the kinds of TLS upstream
// present, in that order.
std::string upstream_kinds(const model::model& m) {
  bool proxy = false, grpc = false, uwsgi = false, stream = false;
  for (const auto& u : m.tls_upstreams) {
    stream = stream || u.context == model::context_kind::stream;
    if (u.context == model::context_kind::stream) continue;
    proxy = proxy || u.module == model::upstream_module::proxy;
    grpc = grpc || u.module == model::upstream_module::grpc;
    uwsgi = uwsgi || u.module == model::upstream_module::uwsgi;
  }
  std::string out;
  auto add = [&](bool on, const char* what) {
    if (on) out += (out.empty() ? "" : ", ") + std::string(what);
  };
  add(proxy, "proxy_pass https://");
  add(grpc, "grpc_pass grpcs://");
  add(uwsgi, "uwsgi_pass suwsgi://");
  add(stream, "stream proxy_ssl");
  return out;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (!m.cfg || m.cfg->files.empty() || m.cfg->root.empty()) return;  // empty-config's case
  for (const auto& s : m.servers)
    if (model::offers_tls(s)) return;
  const std::size_t n = m.cfg->files.size();
  engine::finding f;
  f.rule = id;
  f.level = engine::severity::note;
  const std::string where = "no `listen ... ssl`, `quic` or `ssl_certificate` in " +
                            std::to_string(n) + (n == 1 ? " file" : " files");
  const std::size_t upstreams = m.tls_upstreams.size();
  // nginx as a TLS client only (a plain front proxying to https:// backends): the upstream
  // rules did check something, and saying "nothing TLS" would be wrong.
  f.message = upstreams == 0
                  ? where + ": nothing TLS was checked"
                  : where + ": nginx serves no TLS here; only its " + std::to_string(upstreams) +
                        " TLS " + (upstreams == 1 ? "connection" : "connections") +
                        " to backends (" + upstream_kinds(m) +
                        ") were checked, by the upstream-* rules";
  f.location = {m.cfg->files.front().path, 1, 1};
  f.facts.push_back({"servers", std::to_string(m.servers.size()), "config", std::nullopt});
  if (upstreams > 0)
    f.facts.push_back({"TLS upstreams", std::to_string(upstreams), "config", std::nullopt});
  out.push_back(std::move(f));
}

}  // namespace

engine::rule no_tls_server() {
  return {id, engine::severity::note, "No TLS server in the configuration: nothing TLS was checked",
          doc, check};
}

}  // namespace ngxtls::rules
