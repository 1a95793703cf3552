#!/usr/bin/env bash
# Configures and builds ngxtls (and its tests) in ./build, warnings as errors.
# Usage: scripts/build.sh [TARGET...]   (default: everything)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNGXTLS_WERROR=ON >/dev/null
if [ $# -gt 0 ]; then
  for t in "$@"; do cmake --build build -j "$(nproc)" --target "$t"; done
else
  cmake --build build -j "$(nproc)"
fi
