// hsts-dropped: a location (or `if`, or server) whose own add_header replaces an inherited
// Strict-Transport-Security header.

#include <set>

#include "rules/add_header.hpp"
#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "hsts-dropped";

constexpr const char* doc = R"(# hsts-dropped

## What it flags
A TLS http server, location or `if` block that inherits `add_header Strict-Transport-Security`
from the enclosing level (http, server, location) but has an `add_header` of its own without
it: nginx takes the enclosing level's `add_header` list only when the level has none of its
own, so responses from that block carry no HSTS. Warning, at the block's first `add_header`.
On nginx 1.29.3 and later, `add_header_inherit merge` (in the block or inherited) keeps the
enclosing headers and there is no finding; `add_header_inherit off` in a block drops them and
is reported at that directive.

## Why it matters
The header is set once at the top, and a location that adds, say, `Cache-Control` silently
loses it. Browsers then never learn HSTS from those responses (often the very pages users
land on), and a site that believes it sends HSTS everywhere does not.

## Example
```nginx
server {
    listen 443 ssl;
    add_header Strict-Transport-Security "max-age=63072000" always;
    location /static/ {
        add_header Cache-Control "public, max-age=86400";   # Strict-Transport-Security gone here
    }
}
```

## Fix
Repeat the header in the block (an `include` of a snippet with every security header helps):
```nginx
location /static/ {
    add_header Strict-Transport-Security "max-age=63072000" always;
    add_header Cache-Control "public, max-age=86400";
}
```
or, on nginx 1.29.3 and later, `add_header_inherit merge;` in the block (or once in `http`).

## How the prober confirms it
Not confirmed by a probe: the prober requests only `/`, and a finding names a block, not a URI
that reaches it. tests/integration/test_hsts_nginx.cpp shows, on real nginx 1.22.1, 1.26.3 and
1.30.x, that the places served without the header are exactly the places this rule flags.

## Source
nginx docs, ngx_http_headers_module: `add_header` directives "are inherited from the previous
configuration level if and only if there are no add_header directives defined on the current
level"; `add_header_inherit` (nginx CHANGES 1.29.3). Measured by
tests/integration/test_hsts_nginx.cpp: the locations served without the header on nginx
1.22.1, 1.26.3 and 1.30.6 are exactly those this rule flags; `add_header_inherit` is an unknown
directive on 1.22.1 and 1.26.3, and on 1.30.6 `merge` keeps and `off` drops the header.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  const bool merge_known = m.versions.nginx >= model::version{1, 29, 3};
  std::set<const config::directive*> seen;
  for (const auto& s : m.servers) {
    if (!s.has_ssl || s.context != model::context_kind::http || !s.where) continue;
    if (model::is_on(s.get("ssl_reject_handshake")) || closes_every_request(s)) continue;
    if (!seen.insert(s.where).second) continue;
    visit_header_levels(ctx, s, [&](const header_level& here, const header_level& parent) {
      constexpr std::string_view hsts = "Strict-Transport-Security";
      const auto drop = header_dropped(here, parent, hsts);
      if (!drop) return;
      const config::directive* inherited = drop->inherited;
      const bool by_off = drop->by_inherit_off;
      const std::string where = level_label(here, s);
      auto f = ctx.make(id, engine::severity::warning,
                        (by_off ? "add_header_inherit off in " + where + " drops"
                                : "add_header in " + where +
                                      " replaces the inherited add_header list, dropping") +
                            " Strict-Transport-Security (set at " +
                            to_string(ctx.where(inherited)) + "): its responses carry no HSTS",
                        drop->at);
      const std::string value = add_header_text(*inherited);
      f.facts.push_back({"inherited add_header", value, "enclosing level", ctx.where(inherited)});
      if (here.inherit_where)
        f.facts.push_back({"add_header_inherit", std::string(here.inherit), "block",
                           ctx.where(here.inherit_where)});
      f.fix = "add_header " + value + ";  # repeat it in " + where +
              (merge_known ? "\n# or keep every inherited header: add_header_inherit merge;" : "");
      f.server = server_label(ctx, s);
      for (const auto& l : s.listens)
        if (l.ssl) f.ports.push_back(l.port);
      out.push_back(std::move(f));
    });
  }
}

}  // namespace

engine::rule hsts_dropped() {
  return {id, engine::severity::warning,
          "A block's own add_header drops the inherited Strict-Transport-Security header", doc,
          check};
}

}  // namespace ngxtls::rules
