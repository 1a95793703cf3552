#!/usr/bin/env bash
# README's test command: install, build, run the whole test suite with ctest, then the
# ASan+UBSan run (scripts/sanitize.sh, ./build-asan) and the bounded libFuzzer run
# (scripts/fuzz.sh, ./build-fuzz, about 60 s of fuzzing). Any of the three failing
# fails the script; the later ones still run, so one CI log shows every failure.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# Wall time so far, then bash's `times`: CPU user and system time of this shell, then of its
# children (every step), so far; on a loaded machine the CPU figures say what 2 idle cores need.
phase() {
  echo "test.sh: $1 done after $(($(date +%s) - start))s; CPU so far (shell, then children):"
  times
}
bash scripts/install-deps.sh
bash scripts/build.sh
phase build
rc=0
# The nginx version matrix (1.22.1, 1.26.3, 1.30.x) for tests/integration/test_nginx_versions.cpp;
# a version no longer in Debian's pool is skipped by those tests with the script's message.
bash scripts/nginx-versions.sh || rc=1
phase nginx-versions
ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 600 || rc=1
phase ctest
bash scripts/sanitize.sh || rc=1
phase sanitize
bash scripts/fuzz.sh || rc=1
phase fuzz
if [ "$rc" -ne 0 ]; then
  echo "test.sh: FAILED (see ctest, sanitize: or fuzz: above)" >&2
fi
exit "$rc"
