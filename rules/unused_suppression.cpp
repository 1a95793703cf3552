// unused-suppression: a `# ngxtls: ignore RULE` comment that silences nothing. The engine
// reports it (src/engine/engine.cpp, report_unused) after every other rule ran; this file
// holds the rule's id and doc so that selection, severity overrides and docs treat it as
// any other rule.

#include "engine/engine.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* doc = R"(# unused-suppression

## What it flags
An inline suppression comment, `# ngxtls: ignore RULE-ID -- reason`, that silenced no finding
of that rule on its own line or the line below, or that names no rule at all. Note.

## Why it matters
Suppressions outlive the findings they were written for: the config gets fixed, the comment
stays, and later the same rule's real finding on that line is hidden without anyone
deciding so. A misspelt rule id suppresses nothing while looking like it does.

## Example
```nginx
# ngxtls: ignore session-cache-per-worker -- load balancer pins clients
ssl_session_cache shared:SSL:10m;   # fixed since: the comment is stale
```

## Fix
Delete the comment, or correct the rule id (`ngxtls rules` lists them).

## How the prober confirms it
Not applicable: this is about the lint's own annotations.

## Source
A `# ngxtls: ignore` comment that matches no finding is reported, so that stale suppressions do
not pile up and hide a later finding. A suppression for a rule that did not
run (`--select`, `--ignore`, `.ngxtls.toml`) is not reported.
)";

void check(const engine::context&, engine::finding_list&) {}

}  // namespace

engine::rule unused_suppression() {
  return {"unused-suppression", engine::severity::note,
          "An `# ngxtls: ignore` comment silences nothing (or names no rule)", doc, check};
}

}  // namespace ngxtls::rules
