#include "model/version.hpp"

#include <cctype>

namespace ngxtls::model {

std::string version::str() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<version> version::parse(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && !std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == text.size()) return std::nullopt;
  int parts[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) break;
    long v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      v = v * 10 + (text[i] - '0');
      if (v > 100000) return std::nullopt;
      ++i;
    }
    parts[k] = static_cast<int>(v);
    if (i < text.size() && text[i] == '.') ++i; else break;
  }
  return version{parts[0], parts[1], parts[2]};
}

nginx_v_info parse_nginx_v(const std::string& text) {
  nginx_v_info out;
  if (auto p = text.find("nginx/"); p != std::string::npos) out.nginx = version::parse(text.substr(p + 6, 20));
  auto running = text.find("running with OpenSSL ");
  auto built = text.find("built with OpenSSL ");
  if (running != std::string::npos) out.openssl = version::parse(text.substr(running + 21, 20));
  else if (built != std::string::npos) out.openssl = version::parse(text.substr(built + 19, 20));
  return out;
}

}  // namespace ngxtls::model
