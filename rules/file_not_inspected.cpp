// file-not-inspected: a certificate, key, dhparam or CA file the config names that is not on
// this machine (or cannot be read), so the certificate rules could not look at it.

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "rules/common.hpp"
#include "rules/rules.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "file-not-inspected";

constexpr const char* doc = R"(# file-not-inspected

## What it flags
A file named by `ssl_certificate`, `ssl_certificate_key`, `ssl_dhparam`,
`ssl_trusted_certificate`, `ssl_client_certificate` or `ssl_crl` that does not exist on the
machine running the lint, or cannot be read. Note; error with `--strict-files` (or
`strict_files = true` in `.ngxtls.toml`). Paths with variables and `data:` values are not
files and are skipped.

## Why it matters
CI often lints a config without its secrets, so a missing file is normal there: the note
says which checks (expiry, key size, key match, chain, names, DH size) did not run. On the
host itself a missing file means nginx will not start (`[emerg] cannot load certificate`),
which is what `--strict-files` is for.

## Example
```nginx
ssl_certificate     /etc/letsencrypt/live/example.com/fullchain.pem;   # not in the CI checkout
ssl_certificate_key /etc/letsencrypt/live/example.com/privkey.pem;
```

## Fix
Lint on the host (or in a stage that has the files), or pass `--conf-prefix` so relative
paths resolve; silence the note in CI with `--ignore file-not-inspected`.

## How the prober confirms it
The prober reads the served certificate instead: `ngxtls probe HOST` reports its expiry, key
and names.

## Source
README.md: missing files the config names are a note ("not inspected here"),
`--strict-files` makes them errors; nginx resolves these paths against the conf prefix
(ngx_conf_full_name).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const bool strict = ctx.options().strict_files;
  std::set<std::string> seen;
  std::map<std::string, std::string> problems;  ///< resolved path -> problem ("" = readable)
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl) continue;
    for (const char* name : {"ssl_certificate", "ssl_certificate_key", "ssl_dhparam",
                             "ssl_trusted_certificate", "ssl_client_certificate", "ssl_crl"}) {
      const auto* st = s.get(name);
      if (!st) continue;
      for (const auto& occ : st->values) {
        if (occ.args.empty() || dynamic_path(occ.args[0]) || occ.args[0].rfind("engine:", 0) == 0)
          continue;
        const std::string path = ctx.resolve(occ.args[0]);
        // Thousands of servers name the same few files: ask the filesystem once per path.
        auto known = problems.find(path);
        if (known == problems.end()) {
          std::error_code ec;
          std::string problem;
          if (!std::filesystem::exists(path, ec))
            problem = "is not on this machine";
          else if (::access(path.c_str(), R_OK) != 0)
            problem = "cannot be read here";
          known = problems.emplace(path, std::move(problem)).first;
        }
        if (known->second.empty()) continue;
        const std::string& problem = known->second;
        if (!seen.insert(std::string(name) + '\n' + path).second) continue;
        auto f = ctx.make(
            id, strict ? engine::severity::error : engine::severity::note,
            std::string(name) + " \"" + path + "\" " + problem +
                (strict ? ": nginx will not start" : ": certificate and key checks skipped"),
            occ.where);
        f.facts.push_back({name, std::string(occ.args[0]),
                           model::to_string(st->from, s.context == model::context_kind::stream),
                           occ.where ? std::optional(ctx.where(occ.where)) : std::nullopt});
        f.server = server_label(ctx, s);
        out.push_back(std::move(f));
      }
    }
  }
}

}  // namespace

engine::rule file_not_inspected() {
  return {id, engine::severity::note,
          "A certificate, key or DH file the config names is not readable here", doc, check};
}

}  // namespace ngxtls::rules
