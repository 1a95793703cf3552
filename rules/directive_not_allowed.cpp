// directive-not-allowed-here: Directive in a context where nginx does not allow it.
// The walk over nginx's directive table lives in rules/directive_check.cpp, shared by
// unknown-directive, directive-not-allowed-here and directive-arguments.

#include "rules/directive_check.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "directive-not-allowed-here";

constexpr const char* doc = R"(# directive-not-allowed-here

## What it flags
A known directive used in a block where nginx's table does not allow it, e.g. `ssl_protocols`
in a `location`, `proxy_pass` in a `server`, `worker_processes` in `http`. Error: nginx says
`"X" directive is not allowed here` and refuses to start. A file without `events`, `http` or
`stream` blocks whose top level fits `http` or `server` better than the main context is read
as a snippet for that context (as it would be included).

## Why it matters
nginx refuses the whole configuration. Misplaced TLS directives are a common result of moving
blocks between files: `ssl_*` directives belong in `http` or `server` (or `stream`).

## Example
```nginx
server {
    listen 443 ssl;
    location / {
        ssl_protocols TLSv1.2 TLSv1.3;   # not allowed in location
    }
}
```

## Fix
Move the directive to a context the nginx documentation lists for it (the message names the
context it was found in).

## How the prober confirms it
It cannot: nginx does not start.

## Source
nginx's directive table measured from nginx 1.22.1 (`tools/probe_directive_table.py`, one
config per directive and context); nginx src/core/ngx_conf_file.c, ngx_conf_handler
(`"%s" directive is not allowed here`). Checked against the corpus verdicts
(tests/unit/test_directive_table.cpp).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const directives::issue_set& set = directives::shared_issues(ctx);
  out.count_dropped(set.dropped[static_cast<std::size_t>(directives::problem::not_allowed)]);
  for (const auto& i : set.issues) {
    if (i.kind != directives::problem::not_allowed) continue;
    auto f = ctx.make(id, i.level, i.message, i.where);
    f.fix = "# see `ngxtls rules directive-not-allowed-here`";
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule directive_not_allowed() {
  engine::rule r{id, engine::severity::error,
                 "Directive in a context where nginx does not allow it", doc, check};
  r.confirmed_by = engine::probe_question::nginx_t_verdict;
  return r;
}

}  // namespace ngxtls::rules
