#!/usr/bin/env bash
# Fetches the real-config corpus that the corpus tests read (tests/integration/test_corpus.cpp,
# tests/unit/test_directive_table.cpp, tests/integration/test_lint_cases.cpp): every file of
# tests/corpus/MANIFEST.tsv from its public repository at the recorded commit, each checked
# against the manifest's sha256. The files are other projects' work under their own licences
# (listed per file in the manifest), so they are test data only and never committed here.
#
# Usage: scripts/fetch-corpus.sh DIR      then: NGXTLS_CORPUS_DIR=DIR ctest --test-dir build
# DIR receives MANIFEST.tsv and files/. crossplane's trees (crossplane_nocheck/) are made by
# running crossplane 0.5.7 and are not fetched: without them the tree comparison is skipped.
# Environment: RAW_BASE=URL  where REPO/COMMIT/PATH is served (default: GitHub's raw files).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:?usage: scripts/fetch-corpus.sh DIR}
manifest=$root/tests/corpus/MANIFEST.tsv
base=${RAW_BASE:-https://raw.githubusercontent.com}
command -v curl >/dev/null || { echo "fetch-corpus: needs curl" >&2; exit 2; }
mkdir -p "$dest"
cp "$manifest" "$dest/MANIFEST.tsv"
fetched=0 failed=0
# Columns: local_path repo path commit license sha256 bytes dup_of ...
while IFS=$'\t' read -r local repo path commit _license sha _bytes _rest; do
  [ "$local" = local_path ] && continue
  out=$dest/$local
  if [ -f "$out" ] && echo "$sha  $out" | sha256sum -c --quiet - 2>/dev/null; then
    fetched=$((fetched + 1))
    continue
  fi
  mkdir -p "$(dirname "$out")"
  if curl -fsSL --max-time 60 --max-filesize 8388608 -o "$out.part" "$base/$repo/$commit/$path" &&
    echo "$sha  $out.part" | sha256sum -c --quiet - 2>/dev/null; then
    mv "$out.part" "$out"
    fetched=$((fetched + 1))
  else
    rm -f "$out.part"
    echo "fetch-corpus: $repo/$path at $commit: not fetched or sha256 differs" >&2
    failed=$((failed + 1))
  fi
done <"$manifest"
echo "fetch-corpus: $fetched files in $dest, $failed failed"
[ "$failed" -eq 0 ]
