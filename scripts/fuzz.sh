#!/usr/bin/env bash
# Fuzzes the parser and include expansion for a bounded time: builds tests/fuzz with
# clang-14 in ./build-fuzz, seeds from fixtures/cases, fixtures/fuzz-regressions and, when
# present, the real-config corpus ($NGXTLS_CORPUS_DIR, else ../shared/corpus), runs libFuzzer
# with a fixed seed for FUZZ_SECONDS (default 60).
# Exits non-zero on any crash, sanitizer report, leak or timeout; the input is saved under
# build-fuzz/artifacts and printed in base64: add it to fixtures/fuzz-regressions/, and
# tests/unit/test_fuzz_regressions.cpp replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${FUZZ_SECONDS:-60}
corpus=${NGXTLS_CORPUS_DIR:-${NGXTLS_SHARED_DIR:-$root/../shared}/corpus}
build=$root/build-fuzz
start=$(date +%s)

cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNGXTLS_TESTS=OFF -DNGXTLS_FUZZ=ON -DNGXTLS_WERROR=ON >/dev/null
if ! cmake --build "$build" --target fuzz_config -j "$(nproc)" >"$build/build.log" 2>&1; then
  tail -n 40 "$build/build.log" >&2
  echo "fuzz: FAILED: the fuzz target does not build with clang-14 (log $build/build.log)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/seeds" "$work/corpus"
# Flat names: the corpus tree has the same file name in many folders.
n=0
while IFS= read -r -d '' f; do
  n=$((n + 1))
  cp "$f" "$work/seeds/seed-$n"
done < <(find "$corpus/files" "$root/fixtures/cases" "$root/fixtures/fuzz-regressions" \
  -type f \( -path "$corpus/files/*" -o -name '*.conf' -o -path '*/fuzz-regressions/*' \) ! -name README.md \
  -print0 2>/dev/null | sort -z)
if [ "$n" -eq 0 ]; then
  echo "fuzz: FAILED: no seeds found (fixtures/cases is missing?)" >&2
  exit 1
fi
[ -d "$corpus/files" ] || echo "fuzz: no real-config corpus at $corpus: seeded from the repository's fixtures only ($n files)"

artifacts=$build/artifacts
rm -rf "$artifacts"
mkdir -p "$artifacts"
log=$build/fuzz.log
# A fixed -seed makes the mutation sequence repeatable; how far it gets in the time depends on
# the machine. -timeout is per input; leaks are detected (ASan's default under libFuzzer).
set +e
"$build/tests/fuzz/fuzz_config" -seed=1 -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=65536 -dict="$root/tests/fuzz/nginx.dict" \
  -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$work/corpus" "$work/seeds" >"$log" 2>&1
rc=$?
set -e
elapsed=$(($(date +%s) - start))
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$artifacts")" ]; then
  tail -n 60 "$log" >&2
  for a in "$artifacts"/*; do
    [ -f "$a" ] || continue
    echo "fuzz: finding $a ($(stat -c %s "$a") bytes), base64:" >&2
    head -c 8192 "$a" | base64 >&2
  done
  echo "fuzz: FAILED (libFuzzer exit $rc) after ${elapsed}s; inputs in $artifacts, log $log" >&2
  exit 1
fi
echo "fuzz: OK, ${runs:-?} inputs in ${seconds}s from $n seeds, no crash, leak or timeout (${elapsed}s total)"
