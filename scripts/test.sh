#!/usr/bin/env bash
# README's test command: install, build, run the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 600
# Not yet in CI (issue 6): scripts/sanitize.sh (ASan+UBSan build, over the time budget so far)
# and scripts/fuzz.sh (bounded libFuzzer run); the fuzz regression inputs run in ctest above.
