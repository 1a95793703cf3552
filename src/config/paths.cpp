#include "config/paths.hpp"

#include <filesystem>

namespace ngxtls::config {

std::string full_name(std::string_view prefix, std::string_view name) {
  if (!name.empty() && name.front() == '/') return std::string(name);
  if (prefix.empty() || prefix == ".") return std::string(name);
  std::string out(prefix);
  if (out.back() != '/') out += '/';
  out += name;
  return out;
}

std::string resolve_file(std::string_view prefix, std::string_view name) {
  const std::string full = full_name(prefix, name);
  if (full.empty()) return full;
  return std::filesystem::path(full).lexically_normal().string();
}

}  // namespace ngxtls::config
