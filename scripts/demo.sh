#!/usr/bin/env bash
# README's main job: install, build, and check the bundled demo config in a sandbox nginx:
# lint findings confirmed or refuted by a real nginx on loopback (exits 0).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh ngxtls
./build/ngxtls check fixtures/demo/nginx.conf --sandbox --fail-on never
