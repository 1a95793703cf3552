#!/usr/bin/env bash
# Installs what ngxtls needs to build and test on Debian 12. Idempotent; root or sudo.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libpcre2-dev zlib1g-dev curl xz-utils gpgv debian-archive-keyring
  libssl-dev openssl tao-pegtl-dev libcli11-dev libtoml11-dev doctest-dev nlohmann-json3-dev
  libmicrohttpd-dev libcpp-httplib-dev libbrotli-dev libyaml-cpp-dev libcrypt-dev prometheus
  nginx libnginx-mod-http-lua libnginx-mod-stream libnginx-mod-mail apache2-utils
  python3 python3-jsonschema openjdk-17-jdk-headless
  clang-14 clang-format-14 libfuzzer-14-dev libclang-rt-14-dev
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
