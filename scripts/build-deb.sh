#!/usr/bin/env bash
# Builds the Debian package (debian/, debhelper with its cmake support) into OUT_DIR.
# Usage: scripts/build-deb.sh OUT_DIR [BUILD_DIR]
#   without BUILD_DIR: configures and builds from scratch, as `dpkg-buildpackage -b` does;
#   with BUILD_DIR: packages that already built tree (tests/integration/test_package.cpp reuses
#   the tree CI built: NGXTLS_PREBUILT_DIR in debian/rules).
# The source is copied to a temporary directory first: dpkg-buildpackage writes its results
# beside the source tree, and debian/rules clean must not touch the working tree.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: build-deb.sh OUT_DIR [BUILD_DIR]}"
prebuilt="${2:-}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if [ -n "$prebuilt" ]; then prebuilt="$(cd "$prebuilt" && pwd)"; fi
work="$(mktemp -d "${TMPDIR:-/tmp}/ngxtls-deb.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir "$work/ngxtls"
tar -C "$src" --exclude=./.git --exclude='./build' --exclude='./build-*' --exclude='./obj-*' \
  -cf - . | tar -C "$work/ngxtls" -xf -
(cd "$work/ngxtls" && NGXTLS_PREBUILT_DIR="$prebuilt" dpkg-buildpackage -b -uc -us)
cp "$work"/*.deb "$out/"
ls "$out"/*.deb
