#!/usr/bin/env bash
# Scaffolds a new lint rule, as clang-tidy's add_new_check.py does for a check: writes
#   rules/NAME.cpp                        the rule (id, severity, summary, doc, check) with a
#                                         working example check to replace
#   fixtures/rules/ID/flags.conf          a fixture with one finding, pinned by line, severity,
#                                         column and message (`# expect: ID warning col 9 "..."`)
#   fixtures/rules/ID/ok.conf             a clean fixture (no finding)
# registers the rule in rules/rules.hpp and rules/registry.cpp, formats what it wrote with
# clang-format-14 and the tree's .clang-format, then builds ngxtls and regenerates docs/rules
# (the rule's page and the index) unless --no-build.
#
# Usage: scripts/new-rule.sh [--root DIR] [--build DIR] [--no-build] RULE-ID "One-line summary"
#   RULE-ID  lowercase words joined by single hyphens (e.g. session-cache-too-small); the C++
#            names use underscores (rules/session_cache_too_small.cpp, rules::session_cache_too_small)
#   --root   the source tree to write into (default: the tree holding this script)
#   --build  the build directory (default: ROOT/build)
# Refuses a malformed id and an id, file or fixture folder that exists already; writes nothing
# then. Exit 0 on success, 2 on a usage error or a refusal.
set -euo pipefail

usage() {
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
fail() {
  echo "new-rule.sh: $*" >&2
  exit 2
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The style is the one of the tree holding this script (a --root scratch tree may have none).
style="$root/.clang-format"
build=""
do_build=1
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --root) [[ $# -ge 2 ]] || usage; root="$2"; shift 2 ;;
    --build) [[ $# -ge 2 ]] || usage; build="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h | --help) usage ;;
    --) shift; args+=("$@"); break ;;
    -*) fail "unknown option $1" ;;
    *) args+=("$1"); shift ;;
  esac
done
[[ ${#args[@]} -eq 2 ]] || usage
id="${args[0]}"
summary="${args[1]}"
build="${build:-$root/build}"

# The id: what `ngxtls lint --select` and `# ngxtls: ignore` take, a file name and a C++ name.
if ! [[ "$id" =~ ^[a-z][a-z0-9]*(-[a-z0-9]+)*$ ]] || [[ ${#id} -gt 60 ]]; then
  fail "\"$id\" is not a rule id: lowercase letters and digits in words joined by single hyphens, starting with a letter, at most 60 characters"
fi
if [[ -z "$summary" || "$summary" == *$'\n'* || "$summary" == *'"'* || "$summary" == *'\'* ]]; then
  fail "the summary must be one line without double quotes or backslashes"
fi
name="${id//-/_}"

cpp="$root/rules/$name.cpp"
hpp="$root/rules/rules.hpp"
registry="$root/rules/registry.cpp"
fixtures="$root/fixtures/rules/$id"
[[ -f "$hpp" && -f "$registry" ]] || fail "$root does not look like the ngxtls tree (no rules/rules.hpp or rules/registry.cpp)"
[[ ! -e "$cpp" ]] || fail "rules/$name.cpp exists already"
[[ ! -e "$fixtures" ]] || fail "fixtures/rules/$id exists already"
[[ ! -e "$root/docs/rules/$id.md" ]] || fail "docs/rules/$id.md exists already"
if grep -q "rules::$name()" "$registry" || grep -q "engine::rule $name();" "$hpp" ||
  grep -rqsF --include='*.cpp' "id = \"$id\"" "$root/rules"; then
  fail "a rule named $id is registered already"
fi
last_registered=$(grep -n -E '^ +rules::[a-z0-9_]+\(\),$' "$registry" | tail -1 | cut -d: -f1)
last_declared=$(grep -n -E '^engine::rule [a-z0-9_]+\(\);$' "$hpp" | tail -1 | cut -d: -f1)
[[ -n "$last_registered" && -n "$last_declared" ]] ||
  fail "cannot find the rule list in rules/registry.cpp or the declarations in rules/rules.hpp"
# As scripts/format.sh finds it; checked before anything is written.
formatter=${CLANG_FORMAT:-clang-format-14}
command -v "$formatter" >/dev/null || formatter=clang-format
command -v "$formatter" >/dev/null || fail "clang-format-14 is not installed (scripts/install-deps.sh installs it)"
[[ -f "$style" ]] || fail "no $style to format the new files with"

mkdir -p "$fixtures"
cat >"$cpp" <<EOF
// $id: $summary.

#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "$id";

// The doc: \`ngxtls rules $id\` prints it and docs/rules/$id.md is generated from it. Every
// section is required (tests/unit/test_rule_docs.cpp). Cite measured nginx behaviour as
// docs/nginx-facts.md#ANCHOR, or nginx's documentation or CHANGES.
constexpr const char* doc = R"(# $id

## What it flags
TODO: what in the configuration this rule reports, and at which severity. The scaffold flags
\`ssl_buffer_size\` in a TLS server, as an example to replace.

## Why it matters
TODO: what goes wrong for clients or operators, with numbers where they are measured.

## Example
\`\`\`nginx
ssl_buffer_size 4k;
\`\`\`

## Fix
\`\`\`nginx
# TODO: the corrected configuration
\`\`\`

## How the prober confirms it
TODO: the probe question that confirms or refutes a finding, or "Not applicable".

## Source
TODO: nginx's documentation, CHANGES or source, or docs/nginx-facts.md#ANCHOR.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  // One finding per directive, however many servers inherit it.
  std::set<const config::directive*> seen;
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl) continue;
    const auto* st = s.get("ssl_buffer_size");
    if (!st || !st->where() || !seen.insert(st->where()).second) continue;
    auto f = ctx.make(id, engine::severity::warning,
                      "TODO: say what is wrong with ssl_buffer_size " + std::string(st->first()),
                      st->where());
    f.facts.push_back(setting_evidence(ctx, s, "ssl_buffer_size"));
    f.fix = "# TODO: the fix snippet";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule $name() {
  engine::rule r{id, engine::severity::warning, "$summary", doc, check};
  // The probe question whose answer confirms or refutes a finding in \`ngxtls check\`
  // (engine::probe_question in src/engine/finding.hpp; check::answers() lists those with a
  // judge, and the doc's "How the prober confirms it" is generated from it). none: check shows
  // the finding as lint found it.
  r.confirmed_by = engine::probe_question::none;
  // Whether a finding costs session resumption (ticket keys, session caches): then
  // \`check --sandbox --load\` measures its price in full handshakes per second.
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
EOF

cat >"$fixtures/flags.conf" <<EOF
# A TLS server that sets ssl_buffer_size: one finding, on the directive.
events {}
http {
    server {
        listen 443 ssl;
        server_name example.test;
        ssl_buffer_size 4k;  # expect: $id warning col 9 "TODO: say what is wrong with ssl_buffer_size 4k"
    }
}
EOF
cat >"$fixtures/ok.conf" <<EOF
# A TLS server without ssl_buffer_size: no finding.
events {}
http {
    server {
        listen 443 ssl;
        server_name example.test;
    }
}
EOF

# Registration: after the last rule in each list, so the order of the catalog is the order of
# addition.
sed -i "${last_registered}r /dev/stdin" "$registry" <<<"      rules::$name(),"
sed -i "${last_declared}r /dev/stdin" "$hpp" <<<"/// $id: $summary.
engine::rule $name();"
"$formatter" --style="file:$style" -i "$cpp" "$hpp" "$registry"

echo "wrote rules/$name.cpp, fixtures/rules/$id/flags.conf and ok.conf; registered rules::$name"
if [[ $do_build -eq 1 ]]; then
  [[ -d "$build" ]] || fail "no build directory $build: configure one (see CONTRIBUTING.md) or pass --no-build"
  cmake --build "$build" --target ngxtls
  (cd "$root" && "$build/ngxtls" rules --write-docs docs/rules)
  echo "regenerated docs/rules (docs/rules/$id.md)"
else
  echo "next: cmake --build build --target ngxtls && ./build/ngxtls rules --write-docs docs/rules"
fi
echo "then: replace the TODOs and the example check, add fixtures, run ctest -R 'rule fixtures: $id'"
