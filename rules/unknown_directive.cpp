// unknown-directive: Directive nginx does not know (for the assumed version and loaded modules).
// The walk over nginx's directive table lives in rules/directive_check.cpp, shared by
// unknown-directive, directive-not-allowed-here and directive-arguments.

#include "rules/directive_check.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "unknown-directive";

constexpr const char* doc = R"(# unknown-directive

## What it flags
A directive name that the assumed nginx does not know:
- Error: not in nginx's directive table (a typo, a directive of a newer nginx than the
  assumed version, e.g. `http2` before 1.25.1). nginx says `unknown directive "X"` and
  refuses to start.
- Warning: a directive of a known module (Lua, headers-more, echo, njs, GeoIP, Brotli, mail,
  ...) that the config does not load with `load_module`; declare modules built into your
  nginx (OpenResty, a custom build) in `.ngxtls.toml`: `modules = ["lua", "headers-more"]`.
- Error for `stream { }` or `mail { }` without a `load_module` for its module when the
  nginx here is built with it as a dynamic module (`nginx -V` shows `--with-stream=dynamic`,
  `--with-mail=dynamic`: Debian, Ubuntu): `nginx -t` says `unknown directive "stream"`.
  Debian's nginx.conf loads them through `include /etc/nginx/modules-enabled/*.conf;`. When
  nginx -V did not run (the version was given), `mail` stays a warning and `stream` is
  taken as built in (nginx.org's packages build it in).
- Note instead of error when the config loads a module ngxtls does not know, which may
  provide the name.
The name inside a key-value block (`map`, `types`, `geo`, ...) is not a directive and is not
checked; a BOM-prefixed first directive belongs to `utf8-bom`; `ssl` on 1.25.1 and later to
`obsolete-directive`.

## Why it matters
`nginx -t` stops at the first unknown directive, so a reload in production fails, or a
fresh start leaves the site down. Catching it in CI is cheaper.

## Example
```nginx
http {
    server_tokens off;
    proxy_passs http://app;          # typo
    more_set_headers "Server: x";    # headers-more, not loaded
}
```

## Fix
Correct the name, load the module (`load_module modules/ngx_http_headers_more_filter_module.so;`)
or declare it as built in, or lint with the nginx version you deploy (`--nginx-version`).

## How the prober confirms it
It cannot: nginx does not start.

## Source
nginx's directive table measured from nginx 1.22.1 (Debian 12, with the Lua, NDK and stream
modules) by `tools/probe_directive_table.py`, stored in `rules/data/nginx-1.22.1-directives.tsv`;
later additions from nginx CHANGES (1.25.0 HTTP/3, 1.25.1 `http2`); nginx
src/core/ngx_conf_file.c, ngx_conf_handler (`unknown directive "%s"`). Checked against the
verdicts of nginx 1.22.1 on the shared corpus (tests/unit/test_directive_table.cpp). The
dynamic stream module measured with Debian's nginx 1.22.1 (tests/integration/test_site_files.cpp:
`unknown directive "stream"` without `load_module`, accepted with it).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const directives::issue_set& set = directives::shared_issues(ctx);
  out.count_dropped(set.dropped[static_cast<std::size_t>(directives::problem::unknown)]);
  for (const auto& i : set.issues) {
    if (i.kind != directives::problem::unknown) continue;
    auto f = ctx.make(id, i.level, i.message, i.where);
    f.fix = "# see `ngxtls rules unknown-directive`";
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule unknown_directive() {
  engine::rule r{id, engine::severity::error,
                 "Directive nginx does not know (for the assumed version and loaded modules)", doc,
                 check};
  r.confirmed_by = engine::probe_question::nginx_t_verdict;
  return r;
}

}  // namespace ngxtls::rules
