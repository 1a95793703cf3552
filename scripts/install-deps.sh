#!/usr/bin/env bash
# Installs what ngxtls needs to build and test on Debian 12. Idempotent; root or sudo.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libpcre2-dev zlib1g-dev curl xz-utils gpgv debian-archive-keyring
  libssl-dev openssl libngtcp2-dev libngtcp2-crypto-gnutls-dev libgnutls28-dev ngtcp2-server
  ngtcp2-client tao-pegtl-dev libcli11-dev libtoml11-dev doctest-dev nlohmann-json3-dev
  libmicrohttpd-dev libcpp-httplib-dev libbrotli-dev libyaml-cpp-dev libcrypt-dev prometheus
  nginx libnginx-mod-http-lua libnginx-mod-stream libnginx-mod-mail apache2-utils
  python3 python3-jsonschema openjdk-17-jdk-headless
  clang-14 clang-format-14 libfuzzer-14-dev libclang-rt-14-dev
  debhelper lintian pre-commit mmdebstrap fish zsh
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# The nginx package may start a system nginx; the tests start their own on free ports.
# The SARIF Multitool (Microsoft's SARIF SDK, from the npm registry) for the GitHub ingestion
# validation of our SARIF (tests/integration/test_code_scanning.cpp). npm does not run the
# package's install script that marks its binary executable, so that is done here.
multitool_dir=/opt/ngxtls-tools/sarif-multitool
multitool="$multitool_dir/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"
# npm comes with the machine (Node.js is not taken from Debian here).
if [ ! -x "$multitool" ] && command -v npm >/dev/null; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd mkdir -p "$multitool_dir"
  $sudo_cmd npm install --silent --no-audit --no-fund --prefix "$multitool_dir" @microsoft/sarif-multitool@5.7.0 \
    || echo "install-deps.sh: npm could not install @microsoft/sarif-multitool (the SARIF test says so)" >&2
  if [ -f "$multitool" ]; then $sudo_cmd chmod 0755 "$multitool"; fi
fi
