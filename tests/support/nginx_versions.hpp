#pragma once
// The nginx version matrix installed by scripts/nginx-versions.sh: which real nginx binaries the
// integration tests can run, read from the script's manifest. No doctest macros here.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ngxtls::test {

/// One line of the manifest: a slot of the matrix and what the script found for it.
struct nginx_version_entry {
  std::string slot;     ///< matrix slot: "1.22", "1.26" or "1.30"
  std::string version;  ///< nginx version ("1.30.6"), or the wanted one when not installed
  std::string
      status;  ///< "ok", "skip" (not available here) or "fail" (verification or build failed)
  std::string binary;  ///< the nginx executable when status is "ok"
  std::string note;    ///< origin and OpenSSL version, or why it is skipped/failed
};

/// The manifest: $NGXTLS_NGINX_CACHE/manifest, else /var/cache/ngxtls-nginx/manifest when it
/// exists, else the script's per-user fallback ${XDG_CACHE_HOME:-$HOME/.cache}/ngxtls-nginx.
std::filesystem::path nginx_versions_manifest();

/// All lines of the manifest; empty when it does not exist. Lines that do not have five
/// tab-separated fields are ignored.
std::vector<nginx_version_entry> read_nginx_versions();

/// The entry for `slot`. When the manifest or the slot's line is missing, an entry with status
/// "skip" whose note says to run scripts/nginx-versions.sh.
nginx_version_entry nginx_version_for(const std::string& slot);

}  // namespace ngxtls::test
