// empty-config: a main configuration file with no directive at all (empty, or comments only).

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "empty-config";

constexpr const char* doc = R"(# empty-config

## What it flags
A main configuration file (or stdin, or the main file of an `nginx -T` dump) that holds no
directive at all: empty, white space only, or comments only. Included files may be empty;
only the main file is checked.

## Why it matters
There is nothing to lint, and a lint that reports nothing would read as a clean pass. It is
most often the wrong file (a fresh `touch nginx.conf`, a template not rendered, a truncated
copy), and nginx refuses to start with it: nginx 1.22.1 says `the configuration file ...
syntax is ok`, then `[emerg] no "events" section in configuration` and `test failed`
(exit 1).

## Example
```nginx
# nginx.conf: rendered by the deploy script (it failed)
```

## Fix
Lint the file nginx really loads (`nginx -T | ngxtls lint -` shows what that is), or render
the template first.

## How the prober confirms it
It cannot: nginx does not start with this file.

## Source
Measured with nginx 1.22.1: `nginx -t -c EMPTY -p DIR -e DIR/error.log` on an empty file and
on a file holding only a comment both fail with `[emerg] no "events" section in
configuration` (the events module's init_conf, src/event/ngx_event.c). Test:
fixtures/rules/empty-config and tests/integration/test_output_honesty.cpp ("an empty or comment-only
main config is an empty-config error, not a clean pass").
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto* cfg = ctx.model().cfg;
  if (!cfg || cfg->files.empty()) return;
  // A folder of site files has no main file: it is empty when none of its files holds anything.
  if (cfg->implied == config::implied_context::http_directory ? !cfg->root.empty()
                                                              : !cfg->files.front().parsed.empty())
    return;
  const auto& main = cfg->files.front();
  engine::finding f;
  f.rule = id;
  f.level = engine::severity::error;
  f.message =
      "the main configuration file holds no directive (it is empty or only comments): "
      "there is nothing to lint, and nginx refuses it (no \"events\" section in "
      "configuration)";
  f.location = {main.path, 1, 1};
  out.push_back(std::move(f));
}

}  // namespace

engine::rule empty_config() {
  return {id, engine::severity::error,
          "The main config holds no directive: nothing to lint, and nginx will not start", doc,
          check};
}

}  // namespace ngxtls::rules
