#!/usr/bin/env bash
# README's main job: install, build, and lint the bundled demo config (exits 0).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh ngxtls
./build/ngxtls lint fixtures/demo/nginx.conf --nginx-version 1.22.1 --fail-on never
