#!/usr/bin/env bash
# Builds the ngxtls image without a registry, from Debian packages only: mmdebstrap makes the
# Debian 12 root file system with nginx and the ngxtls package (the Dockerfile's final stage),
# then podman imports it with the Dockerfile's user, working directory and entrypoint.
# Usage: scripts/build-image.sh NGXTLS.deb OUT_DIR [IMAGE_NAME]
# Writes OUT_DIR/rootfs.tar, and imports it as IMAGE_NAME (default ngxtls:local) when podman
# is there. tests/integration/test_package.cpp runs it and the image (or, where the machine
# cannot run containers, the root file system in a chroot).
set -euo pipefail
deb="$(cd "$(dirname "${1:?usage: build-image.sh NGXTLS.deb OUT_DIR [IMAGE]}")" && pwd)/$(basename "$1")"
out="${2:?usage: build-image.sh NGXTLS.deb OUT_DIR [IMAGE]}"
image="${3:-ngxtls:local}"
mkdir -p "$out"
# The package's own dependencies come from the archive; the package itself is installed with
# dpkg in a hook (mmdebstrap 1.3.5 cannot hand a local .deb to apt inside its chroot).
deps="$(dpkg-deb -f "$deb" Depends | sed -e 's/([^)]*)//g' -e 's/ //g')"
# As the Dockerfile: nginx beside ngxtls, a non-root user owning /work, no apt lists.
mmdebstrap --variant=apt --include="ca-certificates,nginx,$deps" \
  --customize-hook="copy-in $deb /tmp" \
  --customize-hook="chroot \"\$1\" dpkg -i /tmp/$(basename "$deb") && rm \"\$1/tmp/$(basename "$deb")\"" \
  --customize-hook='chroot "$1" useradd --system --uid 10001 --home-dir /work --shell /usr/sbin/nologin ngxtls' \
  --customize-hook='mkdir -p "$1/work" && chown 10001:10001 "$1/work"' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  bookworm "$out/rootfs.tar"
if command -v podman >/dev/null; then
  podman import --change 'USER ngxtls' --change 'WORKDIR /work' \
    --change 'ENTRYPOINT ["ngxtls"]' --change 'CMD ["--help"]' "$out/rootfs.tar" "$image"
fi
