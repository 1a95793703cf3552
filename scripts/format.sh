#!/usr/bin/env bash
# Formats every C++ file the repository tracks with its .clang-format (clang-format 14, the
# version Debian 12 ships). With --check, changes nothing and fails listing the files that
# differ from their formatted form (CI runs this).
set -euo pipefail
cd "$(dirname "$0")/.."
tool=${CLANG_FORMAT:-clang-format-14}
command -v "$tool" >/dev/null || tool=clang-format
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cc' '*.in.cpp')
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! "$tool" --style=file "$f" | cmp -s - "$f"; then
      echo "format: $f differs from clang-format's output (run scripts/format.sh)" >&2
      bad=1
    fi
  done
  [ "$bad" -eq 0 ] && echo "format: ${#files[@]} files formatted"
  exit "$bad"
fi
"$tool" --style=file -i "${files[@]}"
