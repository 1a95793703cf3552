#!/usr/bin/env bash
# README's test command: install, build, run the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 600
# Issue 6: the unit and parser tests under ASan+UBSan, then a bounded fuzz run of the parser
# and include expansion. Each prints one result line and fails the run on any finding.
bash scripts/sanitize.sh
bash scripts/fuzz.sh
