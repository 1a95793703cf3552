// include-dir-unreadable: an `include` glob that could not read a directory, so the files in
// it were not linted.

#include <cstdio>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "include-dir-unreadable";

constexpr const char* doc = R"(# include-dir-unreadable

## What it flags
An `include` with a glob (`include conf.d/*.conf;`) whose directory, or a directory the
pattern walks through, could not be read by the user running the lint (`Permission denied`).
A glob that matches nothing because its directory does not exist is not flagged: nginx
accepts that too, and it is common.

A note, too, for a relative literal include (`include fastcgi_params;`) of a site file or a
folder of site files read without `--conf-prefix` whose file is not there: nginx resolves it
against the main nginx.conf's directory, which a site file read on its own does not name, so
the file is reported as not on this machine and its directives are not linted. In a main
nginx.conf (or with `--conf-prefix`) a missing include stays an input error, as in nginx.

## Why it matters
A glob reads a directory listing. When that fails, glob() skips the directory without an
error, in ngxtls as in nginx, and the include loads fewer files, possibly none. The lint then
passes a config whose servers it never saw. nginx behaves the same way: run as a user who
cannot read the directory, nginx 1.22.1 reports `test is successful` and starts without the
files. (nginx's master usually runs as root and reads it; the lint, run as another user, does
not.)

## Example
```nginx
http {
    include /etc/nginx/conf.d/*.conf;   # conf.d is mode 0700, owned by root; lint runs as ci
}
```

## Fix
Run the lint as a user who can read every included directory (or as root), or lint a saved
`nginx -T` dump taken on the host (`nginx -T > dump.txt`), which holds every included file.

## How the prober confirms it
It cannot: this is about what the lint could read. `ngxtls probe` on the live servers tests
what nginx really loaded.

## Source
Measured with nginx 1.22.1 (`nginx -t -c DIR/nginx.conf -p DIR/` run via `setpriv
--reuid=65534 --regid=65534 --clear-groups`): `include conf.d/*.conf;` with conf.d at mode
0311 or 0000 and a file in it holding an unknown directive gives `test is successful` (exit
0); with conf.d at mode 0755 it fails with `unknown directive`. nginx calls glob() without
GLOB_ERR (src/os/unix/ngx_files.c, ngx_open_glob). Test: tests/integration/test_output_honesty.cpp
("an include glob into an unreadable directory is an include-dir-unreadable warning").
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto* cfg = ctx.model().cfg;
  if (!cfg) return;
  for (const auto& u : cfg->unread_directories) {
    engine::finding f;
    f.rule = id;
    f.level = engine::severity::warning;
    f.message = "the include cannot read the directory " + u.directory + " (" + u.reason +
                "): the files in it were not linted, and nginx run as this user skips them "
                "without an error too";
    f.location = u.include;
    out.push_back(std::move(f));
  }
  for (const auto& m : cfg->missing_includes) {
    engine::finding f;
    f.rule = id;
    f.level = engine::severity::note;
    f.message = m.path +
                " is not on this machine: nginx resolves a relative include against the main "
                "nginx.conf's directory, unknown for a site file read on its own, so the "
                "directives it holds were not linted; --conf-prefix DIR names that directory";
    f.location = m.include;
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule include_dir_unreadable() {
  return {id, engine::severity::warning,
          "An include glob could not read a directory: the files in it were not linted", doc,
          check};
}

}  // namespace ngxtls::rules
