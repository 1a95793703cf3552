// file-not-inspected: a certificate, key, dhparam or CA file the config names that is not on
// this machine (or cannot be read), so the certificate rules could not look at it.

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "file-not-inspected";

constexpr const char* doc = R"(# file-not-inspected

## What it flags
A file named by `ssl_certificate`, `ssl_certificate_key`, `ssl_dhparam`,
`ssl_trusted_certificate`, `ssl_client_certificate`, `ssl_crl` or `ssl_session_ticket_key` that
does not exist on the machine running the lint, or cannot be read. One note per run: "N
certificate/key files not on this machine: certificate checks skipped; --strict-files to fail"
(and "M ticket key files", whose size, mode and copies `ticket-key-rotation` then cannot check),
at the first such directive,
with every file in its evidence and every directive among its places (`locations` in JSON,
`relatedLocations` in SARIF). With `--strict-files` (or `strict_files = true` in
`.ngxtls.toml`) each directive is an error of its own. Paths with variables and `data:` values
are not files and are skipped.

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
  struct absent_file {
    const char* name;  // the directive
    std::string path;  // resolved
    std::string problem;
    const model::occurrence* occ;
  };
  std::vector<absent_file> absent;  // in config order, each directive and path once
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl) continue;
    for (const char* name :
         {"ssl_certificate", "ssl_certificate_key", "ssl_dhparam", "ssl_trusted_certificate",
          "ssl_client_certificate", "ssl_crl", "ssl_session_ticket_key"}) {
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
        if (!strict) {
          absent.push_back({name, path, problem, &occ});
          continue;
        }
        auto f =
            ctx.make(id, engine::severity::error,
                     std::string(name) + " \"" + path + "\" " + problem + ": nginx will not start",
                     occ.where);
        f.facts.push_back({name, std::string(occ.args[0]),
                           model::to_string(st->from, s.context == model::context_kind::stream),
                           occ.where ? std::optional(ctx.where(occ.where)) : std::nullopt});
        f.server = server_label(ctx, s);
        out.push_back(std::move(f));
      }
    }
  }
  if (absent.empty()) return;
  // CI without secrets misses every file at once: one summary, the files as its evidence and
  // its directives as its places.
  std::set<std::string> paths, ticket_keys;
  bool unreadable = false;
  for (const auto& a : absent) {
    (a.name == std::string_view("ssl_session_ticket_key") ? ticket_keys : paths).insert(a.path);
    unreadable = unreadable || a.problem != "is not on this machine";
  }
  auto count = [](std::size_t n, const char* what) {
    return std::to_string(n) + " " + what + (n == 1 ? " file" : " files");
  };
  const std::string which = !paths.empty() && !ticket_keys.empty()
                                ? count(paths.size(), "certificate/key") + " and " +
                                      count(ticket_keys.size(), "ticket key")
                            : paths.empty() ? count(ticket_keys.size(), "ticket key")
                                            : count(paths.size(), "certificate/key");
  const std::string skipped = !paths.empty() && !ticket_keys.empty()
                                  ? "certificate and ticket key checks skipped"
                              : paths.empty() ? "ticket key checks skipped"
                                              : "certificate checks skipped";
  auto f = ctx.make(
      id, engine::severity::note,
      which + (unreadable ? " not on this machine or unreadable here" : " not on this machine") +
          ": " + skipped + "; --strict-files to fail",
      absent.front().occ->where);
  for (std::size_t i = 0; i < absent.size(); ++i) {
    const auto& a = absent[i];
    const auto at = a.occ->where ? std::optional(ctx.where(a.occ->where)) : std::nullopt;
    f.facts.push_back(
        {a.name, a.path, a.problem == "is not on this machine" ? "missing" : "unreadable", at});
    if (i > 0 && at) f.also_at.push_back(*at);
  }
  out.push_back(std::move(f));
}

}  // namespace

engine::rule file_not_inspected() {
  return {id, engine::severity::note,
          "A certificate, key or DH file the config names is not readable here", doc, check};
}

}  // namespace ngxtls::rules
