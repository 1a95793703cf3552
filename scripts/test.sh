#!/usr/bin/env bash
# README's test command: install, build, run the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 600
