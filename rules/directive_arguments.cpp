// directive-arguments: Directive with a number of arguments nginx refuses.
// The walk over nginx's directive table lives in rules/directive_check.cpp, shared by
// unknown-directive, directive-not-allowed-here and directive-arguments.

#include "rules/directive_check.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "directive-arguments";

constexpr const char* doc = R"(# directive-arguments

## What it flags
A known directive with a number of arguments its table entry does not accept, e.g.
`ssl_session_cache` with three arguments or `ssl_protocols` with none. Error: nginx says
`invalid number of arguments in "X" directive` and refuses to start. Only the count is checked
(as nginx does before calling the directive's handler), not the values, except for `listen`
parameters the assumed nginx does not have yet: `listen 443 quic` before 1.25.0 (nginx says
`invalid parameter "quic"`), TCP-only parameters beside `quic` (`ssl`, `proxy_protocol`,
`deferred`, `so_keepalive`, `backlog`, `fastopen`, `http2`: `"listen" directive "ssl" parameter
is incompatible with "quic"`, measured on 1.26.3 and 1.30.6) and `quic` in a stream `listen`
(`invalid parameter "quic"` on 1.26.3).

## Why it matters
nginx refuses the whole configuration. Counts go wrong with a lost `;` between two
directives on one line, an unquoted value with a space, or a template variable that expanded
to nothing.

## Example
```nginx
ssl_session_cache shared:SSL:10m ssl_session_timeout 1h;   # missing ";"
```

## Fix
Split the directives, quote values with spaces, and check the syntax in the nginx docs.

## How the prober confirms it
It cannot: nginx does not start.

## Source
nginx's directive table measured from nginx 1.22.1 (`tools/probe_directive_table.py`, 0 to 8
arguments per directive); nginx src/core/ngx_conf_file.c, ngx_conf_handler
(`invalid number of arguments in "%s" directive`, argument_number[] and the NGX_CONF_1MORE /
2MORE / FLAG / ANY flags); nginx CHANGES 1.25.0 (HTTP/3, the `quic` parameter of `listen`),
src/http/ngx_http_core_module.c, ngx_http_core_listen (`invalid parameter "%V"`). Checked against the corpus verdicts (tests/unit/test_directive_table.cpp).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const directives::issue_set& set = directives::shared_issues(ctx);
  out.count_dropped(set.dropped[static_cast<std::size_t>(directives::problem::arguments)]);
  for (const auto& i : set.issues) {
    if (i.kind != directives::problem::arguments) continue;
    auto f = ctx.make(id, i.level, i.message, i.where);
    f.fix = "# see `ngxtls rules directive-arguments`";
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule directive_arguments() {
  engine::rule r{id, engine::severity::error, "Directive with a number of arguments nginx refuses",
                 doc, check};
  r.confirmed_by = engine::probe_question::nginx_t_verdict;
  return r;
}

}  // namespace ngxtls::rules
