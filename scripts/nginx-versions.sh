#!/usr/bin/env bash
# The nginx version matrix: three real nginx binaries from Debian's archive, for the integration
# tests that measure version-gated behaviour (tests/integration/test_nginx_versions.cpp).
#
#   1.22   Debian 12's nginx package, installed on the system (/usr/sbin/nginx).
#   1.26   upstream nginx 1.26.3, built from the orig tarball that Debian trixie ships, with the
#          system OpenSSL, into a private prefix:
#          ./configure --with-http_ssl_module --with-http_v2_module --with-http_v3_module
#                      --with-stream --with-stream_ssl_module
#          OpenSSL 3.0 has no QUIC API, so nginx's HTTP/3 runs over its OpenSSL compatibility
#          layer (configure says "OpenSSL QUIC compatibility"), which has no early data.
#   1.30   Debian sid's nginx 1.30.x binary package, run with sid's own runtime libraries (libc,
#          libssl3t64, libpcre2, zlib, ...) unpacked beside it and started through sid's dynamic
#          loader by a wrapper sbin/nginx. It runs with sid's OpenSSL (3.6 when this was written).
#
# Every download is checked: the suite's InRelease is verified with gpgv against
# /usr/share/keyrings/debian-archive-keyring.gpg (it holds the bookworm and trixie archive keys
# that sign trixie and sid), the Sources/Packages index against the sha256 in the signed part, and
# the tarball or .deb against the sha256 in that index. The system's apt sources and state are
# never touched: index files are fetched directly with curl into a temporary directory.
#
# Cache: binaries are installed under $NGXTLS_NGINX_CACHE (default /var/cache/ngxtls-nginx, or
# ${XDG_CACHE_HOME:-~/.cache}/ngxtls-nginx without write access to /var/cache), which outlives
# build directories, so CI runs on the same machine reuse them without any network
# access. A version is installed into a staging directory and renamed into place only when it
# works, so an interrupted run leaves no half-installed version. --refresh reinstalls. A built
# version's stamp records its configure arguments: when the script's arguments change, the cached
# build is rebuilt once, and later runs reuse the new one.
#
# Output: the manifest $NGXTLS_NGINX_CACHE/manifest (also printed on stdout), one line per slot,
# tab-separated: SLOT VERSION STATUS PATH NOTE
#   STATUS ok    PATH is the nginx binary; NOTE says where it comes from, its OpenSSL and how
#                it does QUIC (none; nginx's compatibility layer, no early data; or OpenSSL's own
#                QUIC API, early data possible)
#   STATUS skip  the version is not available here; NOTE says why and what to pin instead
#                (the tests skip that version with NOTE)
#   STATUS fail  a download failed verification or the build failed (the tests fail)
# Exit status: 0 when the manifest was written and no slot failed (skipped slots included),
# 1 when a slot failed, 2 for usage errors.
#
# Environment:
#   NGXTLS_NGINX_CACHE           cache and manifest directory (default above)
#   NGXTLS_NGINX_SOURCE_VERSION  version built from trixie's orig tarball (default 1.26.3)
#   NGXTLS_NGINX_SOURCE_SUITE    suite whose Sources index lists it (default trixie)
#   NGXTLS_NGINX_SID_SERIES      sid binary package series (default 1.30)
#   NGXTLS_DEBIAN_MIRROR         Debian archive URL (default: the one apt uses here for this release)
#   JOBS                         make -j (default 2)
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
  echo "Usage: $0 [--refresh] [--manifest-only]"
}

refresh=0
manifest_only=0
for arg in "$@"; do
  case $arg in
    --refresh) refresh=1 ;;
    --manifest-only) manifest_only=1 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done

# /var/cache outlives build trees and CI workspaces; without the rights to it, the user's cache.
default_cache=/var/cache/ngxtls-nginx
if ! { [ -d "$default_cache" ] && [ -w "$default_cache" ]; } && ! { [ ! -e "$default_cache" ] && [ -w /var/cache ]; }; then
  default_cache=${XDG_CACHE_HOME:-$HOME/.cache}/ngxtls-nginx
fi
cache=${NGXTLS_NGINX_CACHE:-$default_cache}
src_version=${NGXTLS_NGINX_SOURCE_VERSION:-1.26.3}
src_suite=${NGXTLS_NGINX_SOURCE_SUITE:-trixie}
sid_series=${NGXTLS_NGINX_SID_SERIES:-1.30}
jobs=${JOBS:-2}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
manifest=$cache/manifest

if [ "$manifest_only" = 1 ]; then
  [ -f "$manifest" ] || { echo "nginx-versions: no manifest at $manifest; run $0" >&2; exit 1; }
  cat "$manifest"
  exit 0
fi

mkdir -p "$cache"
# One run at a time per cache (CI jobs on one machine, ctest fixtures).
exec 9>"$cache/.lock"
flock 9

work=$(mktemp -d -t ngxtls-nginx.XXXXXX)
trap 'rm -rf "$work"' EXIT
log() { echo "nginx-versions: $*" >&2; }

# The Debian archive that this machine's apt uses for its own release (read at run time).
find_mirror() {
  local codename
  # shellcheck disable=SC1091
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  # shellcheck disable=SC2016 # apt expands $(...) itself
  apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 2>/dev/null |
    awk -v c="$codename" '$2 == c && $3 == "main" { sub(/\/$/, "", $1); print $1; exit }'
}
mirror=${NGXTLS_DEBIAN_MIRROR:-}
mirror_known=1

fetch() { # URL OUTFILE: 0, or 22 when the server said 404/410, or another curl error
  curl -fsS --connect-timeout 20 --max-time 600 --retry 2 -o "$2" "$1"
}

check_sha256() { # FILE SHA256 [SIZE]
  if [ -n "${3:-}" ] && [ "$(stat -c %s "$1")" != "$3" ]; then
    log "size mismatch for $1: $(stat -c %s "$1") bytes, the signed index says $3"
    return 1
  fi
  echo "$2  $1" | sha256sum -c --quiet - >/dev/null 2>&1 || {
    log "sha256 mismatch for $1: $(sha256sum "$1" | cut -d' ' -f1), the signed index says $2"
    return 1
  }
}

# verified_index SUITE PATH OUTFILE: fetches dists/SUITE/InRelease, verifies its signature with gpgv
# (at least one VALIDSIG from the archive keyring, no BADSIG), then fetches dists/SUITE/PATH and
# checks it against the sha256 and size that the signed part lists; writes it decompressed.
verified_index() {
  local suite=$1 path=$2 out=$3 rel=$work/$1-InRelease status=$work/$1-gpgv.status
  if [ ! -s "$work/$suite-Release" ]; then
    fetch "$mirror/dists/$suite/InRelease" "$rel" || { log "cannot fetch $mirror/dists/$suite/InRelease"; return 3; }
    gpgv --status-fd 3 --keyring "$keyring" --output "$work/$suite-Release" "$rel" 3>"$status" 2>/dev/null || true
    if grep -q '^\[GNUPG:\] BADSIG' "$status" || ! grep -q '^\[GNUPG:\] VALIDSIG' "$status"; then
      log "$suite/InRelease: no valid signature from a key in $keyring:"
      grep -E 'SIG|NO_PUBKEY' "$status" >&2 || true
      return 1
    fi
    # A stale mirror serves an expired Release: the hashes still hold, so say it and go on.
    local until
    until=$(awk -F': ' '/^Valid-Until: /{print $2; exit}' "$work/$suite-Release")
    if [ -n "$until" ] && [ "$(date -d "$until" +%s)" -lt "$(date +%s)" ]; then
      log "note: $suite's Release expired on $until (the mirror serves an old snapshot)"
    fi
  fi
  local line sha size
  line=$(awk -v p="$path" '/^SHA256:/{in_sha=1; next} /^[^ ]/{in_sha=0} in_sha && $3 == p {print $1, $2; exit}' \
    "$work/$suite-Release")
  [ -n "$line" ] || { log "$suite's Release lists no $path"; return 1; }
  read -r sha size <<<"$line"
  fetch "$mirror/dists/$suite/$path" "$work/index.xz" || { log "cannot fetch $mirror/dists/$suite/$path"; return 3; }
  check_sha256 "$work/index.xz" "$sha" "$size" || return 1
  xz -dc "$work/index.xz" >"$out"
  rm -f "$work/index.xz"
}

# stanza FILE PACKAGE: PACKAGE's first stanza in a Packages index.
stanza() {
  awk -v p="$2" 'BEGIN{RS=""} $0 ~ ("(^|\n)Package: " p "\n") {print; exit}' "$1"
}

line_for() { # SLOT VERSION STATUS PATH NOTE
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5"
}

openssl_of() { # NGINX: "OpenSSL X.Y.Z" it runs with
  "$1" -V 2>&1 | sed -n -e 's/.*running with \(OpenSSL [0-9.]*\).*/\1/p' -e 's/^built with \(OpenSSL [0-9.]*\).*/\1/p' |
    tail -1
}

# quic_of NGINX [ELF]: how that nginx does QUIC, from its configure arguments and the dynamic
# symbols of the binary (ELF, when NGINX is a wrapper script): OpenSSL's own QUIC API (3.5+)
# imports SSL_set_quic_tls_cbs; the BoringSSL/quictls API imports SSL_set_quic_method from libssl;
# nginx's OpenSSL compatibility layer defines SSL_set_quic_method itself (over OpenSSL's keylog
# callback) and cannot do early data.
quic_of() {
  local elf=${2:-$1} syms
  if ! "$1" -V 2>&1 | grep -q -e '--with-http_v3_module'; then
    echo "no QUIC (built without --with-http_v3_module)"
    return
  fi
  syms=$(nm -D "$elf" 2>/dev/null | grep -E ' SSL_set_quic_(tls_cbs|method)' || true)
  if grep -q ' U SSL_set_quic_tls_cbs' <<<"$syms"; then
    echo "QUIC through OpenSSL's own QUIC API (early data possible)"
  elif grep -q ' U SSL_set_quic_method' <<<"$syms"; then
    echo "QUIC through the BoringSSL/quictls QUIC API (early data possible)"
  elif grep -q ' T SSL_set_quic_method' <<<"$syms"; then
    echo "QUIC through nginx's OpenSSL compatibility layer (no early data)"
  else
    echo "QUIC through an OpenSSL interface not recognised (nm -D $elf)"
  fi
}

src_configure="--with-http_ssl_module --with-http_v2_module --with-http_v3_module --with-stream --with-stream_ssl_module"

t_download=0
t_build=0
now() { date +%s; }

# ---- 1.22: the installed Debian 12 package ----
slot_122() {
  local bin=/usr/sbin/nginx pkg v
  if [ ! -x "$bin" ]; then
    line_for 1.22 1.22.1 skip - "no $bin: install Debian 12's nginx package (scripts/install-deps.sh)"
    return
  fi
  v=$("$bin" -v 2>&1 | sed -n 's|^nginx version: nginx/\([0-9.]*\).*|\1|p')
  pkg=$(dpkg-query -W -f='${Version}' nginx 2>/dev/null || true)
  if [ "$v" != 1.22.1 ]; then
    line_for 1.22 "${v:-unknown}" skip - "$bin is nginx ${v:-of unknown version}, not Debian 12's 1.22.1"
    return
  fi
  line_for 1.22 "$v" ok "$bin" "Debian ${pkg:-package}, $(openssl_of "$bin"), $(quic_of "$bin")"
}

# ---- 1.26: upstream tarball from the source suite, built with the system OpenSSL ----
slot_126() {
  local prefix=$cache/nginx-$src_version
  if [ "$refresh" = 0 ] && [ -f "$prefix/.ngxtls-installed" ] && "$prefix/sbin/nginx" -v >/dev/null 2>&1 &&
    grep -qxF "configure $src_configure" "$prefix/.ngxtls-installed"; then
    line_for 1.26 "$src_version" ok "$prefix/sbin/nginx" "upstream, built with $(openssl_of "$prefix/sbin/nginx"), $(quic_of "$prefix/sbin/nginx") (cached)"
    return
  fi
  [ -f "$prefix/.ngxtls-installed" ] && [ "$refresh" = 0 ] &&
    log "nginx $src_version: the cached build's configure arguments differ from [$src_configure]: rebuilding"
  local need="" p
  for p in build-essential libpcre2-dev zlib1g-dev libssl-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need="$need $p"
  done
  if [ -n "$need" ]; then
    line_for 1.26 "$src_version" skip - "missing build dependencies:$need (run scripts/install-deps.sh)"
    return
  fi
  [ "$mirror_known" = 1 ] || { line_for 1.26 "$src_version" skip - "$mirror_msg"; return; }
  local t0 rc=0
  t0=$(now)
  verified_index "$src_suite" main/source/Sources.xz "$work/Sources" || rc=$?
  if [ "$rc" = 3 ]; then line_for 1.26 "$src_version" skip - "cannot reach $mirror"; return; fi
  [ "$rc" = 0 ] || { line_for 1.26 "$src_version" fail - "cannot verify $src_suite's Sources index"; return; }
  local orig=nginx_$src_version.orig.tar.gz rec dir sha size
  # Directory, sha256 and size of the orig tarball from the nginx source stanza that lists it.
  rec=$(awk -v f="$orig" 'BEGIN{RS=""; FS="\n"} /(^|\n)Package: nginx(\n|$)/ {
          dir=""; sha=""; insha=0
          for (i = 1; i <= NF; i++) {
            if ($i ~ /^Directory: /) { dir = substr($i, 12) }
            if ($i ~ /^Checksums-Sha256:/) { insha = 1; continue }
            if ($i !~ /^ /) insha = 0
            if (insha) { split($i, a, " "); if (a[3] == f) { sha = a[1]; size = a[2] } }
          }
          if (dir != "" && sha != "") { print dir, sha, size; exit }
        }' "$work/Sources")
  if [ -z "$rec" ]; then
    local now_v
    now_v=$(awk 'BEGIN{RS=""; FS="\n"} /(^|\n)Package: nginx(\n|$)/ {
              for (i = 1; i <= NF; i++) if ($i ~ /^Version: /) print substr($i, 10) }' "$work/Sources" |
      sed 's/-[^-]*$//' | sort -uV | paste -sd' ')
    line_for 1.26 "$src_version" skip - "nginx $src_version has left $src_suite's pool (its Sources lists nginx ${now_v:-none}); pin NGXTLS_NGINX_SOURCE_VERSION=${now_v%% *} and check the tests' expectations for it"
    return
  fi
  read -r dir sha size <<<"$rec"
  rc=0
  fetch "$mirror/$dir/$orig" "$work/$orig" || rc=$?
  if [ "$rc" = 22 ]; then
    line_for 1.26 "$src_version" skip - "$src_suite's Sources lists $orig but the pool does not serve it (left the pool); pin another NGXTLS_NGINX_SOURCE_VERSION"
    return
  fi
  [ "$rc" = 0 ] || { line_for 1.26 "$src_version" skip - "cannot download $mirror/$dir/$orig"; return; }
  check_sha256 "$work/$orig" "$sha" "$size" ||
    { line_for 1.26 "$src_version" fail - "$orig does not match the sha256 in $src_suite's signed Sources"; return; }
  local t1
  t1=$(now)
  t_download=$((t_download + t1 - t0))
  mkdir "$work/src"
  tar -xzf "$work/$orig" -C "$work/src" --strip-components=1
  local stage=$work/stage
  if ! (cd "$work/src" &&
    # shellcheck disable=SC2086 # the arguments are words
    ./configure --prefix="$prefix" $src_configure >"$work/configure.log" 2>&1 &&
    make -j"$jobs" >"$work/make.log" 2>&1 &&
    make install DESTDIR="$stage" >"$work/install.log" 2>&1); then
    tail -30 "$work"/configure.log "$work"/make.log "$work"/install.log 2>/dev/null >&2 || true
    line_for 1.26 "$src_version" fail - "building nginx $src_version failed (log above)"
    return
  fi
  printf 'nginx %s from %s/%s/%s sha256 %s\nconfigure %s\n' "$src_version" "$mirror" "$dir" "$orig" \
    "$sha" "$src_configure" >"$stage$prefix/.ngxtls-installed"
  # The old build moves aside before the new one moves in, so a test starting nginx meanwhile
  # finds one or the other, never neither.
  rm -rf "$prefix.old"
  [ ! -e "$prefix" ] || mv "$prefix" "$prefix.old"
  mv "$stage$prefix" "$prefix"
  rm -rf "$prefix.old"
  local t2
  t2=$(now)
  t_build=$((t_build + t2 - t1))
  log "nginx $src_version: download+verify $((t1 - t0)) s, configure+make+install $((t2 - t1)) s with -j$jobs"
  line_for 1.26 "$src_version" ok "$prefix/sbin/nginx" "upstream, built with $(openssl_of "$prefix/sbin/nginx"), $(quic_of "$prefix/sbin/nginx")"
}

# ---- 1.30: sid's binary package with sid's runtime libraries ----
sid_libs="libc6 libssl3t64 libpcre2-8-0 zlib1g libcrypt1 libzstd1 libgcc-s1"
slot_130() {
  local prefix=$cache/nginx-sid-$sid_series
  if [ "$refresh" = 0 ] && [ -f "$prefix/.ngxtls-installed" ] && "$prefix/sbin/nginx" -v >/dev/null 2>&1; then
    local v
    v=$("$prefix/sbin/nginx" -v 2>&1 | sed -n 's|^nginx version: nginx/\([0-9.]*\).*|\1|p')
    line_for "$sid_series" "$v" ok "$prefix/sbin/nginx" "$(cat "$prefix/.ngxtls-note"), $(quic_of "$prefix/sbin/nginx" "$prefix/root/usr/sbin/nginx") (cached)"
    return
  fi
  [ "$mirror_known" = 1 ] || { line_for "$sid_series" "$sid_series.x" skip - "$mirror_msg"; return; }
  local t0 rc=0
  t0=$(now)
  verified_index sid main/binary-amd64/Packages.xz "$work/Packages" || rc=$?
  if [ "$rc" = 3 ]; then line_for "$sid_series" "$sid_series.x" skip - "cannot reach $mirror"; return; fi
  [ "$rc" = 0 ] || { line_for "$sid_series" "$sid_series.x" fail - "cannot verify sid's Packages index"; return; }
  local st pkgver
  st=$(stanza "$work/Packages" nginx)
  pkgver=$(sed -n 's/^Version: //p' <<<"$st")
  case $pkgver in
    "$sid_series".*) ;;
    *)
      line_for "$sid_series" "$sid_series.x" skip - "sid's pool now has nginx ${pkgver:-none}, not $sid_series.x (it left the pool); pin NGXTLS_NGINX_SID_SERIES=$(cut -d. -f1,2 <<<"$pkgver") and check the tests' expectations for it"
      return
      ;;
  esac
  local stage=$work/sid-stage root
  root=$stage/root
  mkdir -p "$root" "$stage/sbin"
  local p file sha size
  for p in nginx $sid_libs; do
    st=$(stanza "$work/Packages" "$p")
    file=$(sed -n 's/^Filename: //p' <<<"$st")
    sha=$(sed -n 's/^SHA256: //p' <<<"$st")
    size=$(sed -n 's/^Size: //p' <<<"$st")
    if [ -z "$file" ] || [ -z "$sha" ]; then
      line_for "$sid_series" "${pkgver%-*}" fail - "sid's Packages has no $p"
      return
    fi
    rc=0
    fetch "$mirror/$file" "$work/$p.deb" || rc=$?
    if [ "$rc" != 0 ]; then
      line_for "$sid_series" "${pkgver%-*}" skip - "cannot download $mirror/$file (sid moved on: rerun with --refresh)"
      return
    fi
    check_sha256 "$work/$p.deb" "$sha" "$size" ||
      { line_for "$sid_series" "${pkgver%-*}" fail - "$file does not match the sha256 in sid's signed Packages"; return; }
    dpkg-deb -x "$work/$p.deb" "$root"
    rm -f "$work/$p.deb"
  done
  local t1
  t1=$(now)
  t_download=$((t_download + t1 - t0))
  # Paths in the wrapper are the final ones (the stage is renamed into place below).
  local final_root=$prefix/root libdirs loader
  libdirs=$final_root/usr/lib/x86_64-linux-gnu:$final_root/lib/x86_64-linux-gnu
  loader=usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
  [ -e "$root/$loader" ] || loader=lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
  [ -e "$root/$loader" ] || { line_for "$sid_series" "${pkgver%-*}" fail - "sid's libc6 has no ld-linux-x86-64.so.2"; return; }
  # Every library nginx needs must resolve inside the unpacked tree, never to the system's.
  local listing
  listing=$("$root/$loader" --library-path "$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu" \
    --list "$root/usr/sbin/nginx" 2>&1) || true
  if grep -q 'not found' <<<"$listing" || grep '=>' <<<"$listing" | grep -v -F "$root/" | grep -q .; then
    log "$listing"
    line_for "$sid_series" "${pkgver%-*}" fail - "sid's nginx needs libraries outside [$sid_libs] (listing above)"
    return
  fi
  cat >"$stage/sbin/nginx" <<EOF
#!/bin/sh
# Debian sid's nginx $pkgver with sid's own libc, OpenSSL and PCRE2 (not the system ones).
exec "$final_root/$loader" --library-path "$libdirs" "$final_root/usr/sbin/nginx" "\$@"
EOF
  chmod 755 "$stage/sbin/nginx"
  local ssl_v
  ssl_v=$("$root/$loader" --library-path "$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu" \
    "$root/usr/sbin/nginx" -V 2>&1 | sed -n 's/.*running with \(OpenSSL [0-9.]*\).*/\1/p')
  [ -n "$ssl_v" ] || ssl_v=$("$root/$loader" --library-path "$root/usr/lib/x86_64-linux-gnu" \
    "$root/usr/sbin/nginx" -V 2>&1 | sed -n 's/^built with \(OpenSSL [0-9.]*\).*/\1/p')
  echo "Debian sid $pkgver, sid's libraries, $ssl_v" >"$stage/.ngxtls-note"
  echo "nginx $pkgver and $sid_libs from $mirror sid" >"$stage/.ngxtls-installed"
  rm -rf "$prefix"
  mv "$stage" "$prefix"
  local t2
  t2=$(now)
  t_build=$((t_build + t2 - t1))
  log "nginx $pkgver (sid): download+verify $((t1 - t0)) s, unpack $((t2 - t1)) s"
  line_for "$sid_series" "${pkgver%-*}" ok "$prefix/sbin/nginx" "$(cat "$prefix/.ngxtls-note"), $(quic_of "$prefix/sbin/nginx" "$prefix/root/usr/sbin/nginx")"
}

# The mirror is needed only for versions not in the cache.
if [ -z "$mirror" ]; then
  mirror=$(find_mirror || true)
  if [ -z "$mirror" ]; then
    mirror_known=0
    mirror_msg="cannot tell the Debian mirror from apt's configuration; set NGXTLS_DEBIAN_MIRROR"
  fi
fi

t_start=$(now)
{
  slot_122
  slot_126
  slot_130
} >"$work/manifest"
mv "$work/manifest" "$manifest"
cat "$manifest"
log "total $(($(now) - t_start)) s (download+verify $t_download s, build+unpack $t_build s); manifest $manifest"
if cut -f3 "$manifest" | grep -qx fail; then exit 1; fi
exit 0
