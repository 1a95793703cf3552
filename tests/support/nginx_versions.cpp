#include "support/nginx_versions.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ngxtls::test {

std::filesystem::path nginx_versions_manifest() {
  const char* cache = std::getenv("NGXTLS_NGINX_CACHE");
  if (cache && *cache) return std::filesystem::path(cache) / "manifest";
  // The script's default, else its fallback for users who cannot write /var/cache.
  std::filesystem::path system = "/var/cache/ngxtls-nginx/manifest";
  std::error_code ec;
  if (std::filesystem::exists(system, ec)) return system;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg && *xdg) return std::filesystem::path(xdg) / "ngxtls-nginx" / "manifest";
  if (home && *home) return std::filesystem::path(home) / ".cache" / "ngxtls-nginx" / "manifest";
  return system;
}

std::vector<nginx_version_entry> read_nginx_versions() {
  std::vector<nginx_version_entry> out;
  std::ifstream in(nginx_versions_manifest());
  std::string line;
  // The script writes three lines; the bound keeps a stray file from being read whole.
  for (int n = 0; n < 64 && std::getline(in, line); ++n) {
    std::vector<std::string> f;
    std::istringstream s(line);
    std::string field;
    while (std::getline(s, field, '\t')) f.push_back(field);
    if (f.size() != 5) continue;
    out.push_back({f[0], f[1], f[2], f[3], f[4]});
  }
  return out;
}

nginx_version_entry nginx_version_for(const std::string& slot) {
  for (auto& e : read_nginx_versions())
    if (e.slot == slot) return e;
  return {
      slot, slot + ".x", "skip", "-",
      "no nginx " + slot + " in " + nginx_versions_manifest().string() +
          ": run scripts/nginx-versions.sh (ctest runs it as the nginx_versions_install fixture)"};
}

}  // namespace ngxtls::test
