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
    if (i < text.size() && text[i] == '.')
      ++i;
    else
      break;
  }
  return version{parts[0], parts[1], parts[2]};
}

std::optional<version> version::parse_given(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  std::size_t i = 0;
  for (int part = 0; part < 3; ++part) {
    if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i < text.size() && text[i] == '.' && part < 2)
      ++i;
    else
      break;
  }
  while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
  if (i != text.size()) return std::nullopt;
  return parse(text);
}

std::string unreadable_version(const std::string& what, const std::string& text) {
  return "cannot read " + what + " version \"" + text + "\" (write it as 1.22.1, 3.0 or 1.1.1w)";
}

nginx_v_info parse_nginx_v(const std::string& text) {
  nginx_v_info out;
  if (auto p = text.find("nginx/"); p != std::string::npos)
    out.nginx = version::parse(text.substr(p + 6, 20));
  auto running = text.find("running with OpenSSL ");
  auto built = text.find("built with OpenSSL ");
  if (running != std::string::npos)
    out.openssl = version::parse(text.substr(running + 21, 20));
  else if (built != std::string::npos)
    out.openssl = version::parse(text.substr(built + 19, 20));
  for (const char* module : {"stream", "mail"}) {
    const std::string flag = std::string("--with-") + module + "=dynamic";
    for (auto p = text.find(flag); p != std::string::npos; p = text.find(flag, p + 1)) {
      const std::size_t end = p + flag.size();
      if ((p == 0 || text[p - 1] == ' ') &&
          (end == text.size() || std::isspace(static_cast<unsigned char>(text[end])))) {
        out.dynamic_modules.insert(module);
        break;
      }
    }
  }
  return out;
}

std::string package_owning(const std::string& out, const std::string& path) {
  std::size_t start = 0;
  while (start < out.size()) {
    std::size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(start, end - start);
    start = end + 1;
    // "PACKAGE[:ARCH][, PACKAGE...]: PATH"; "diversion by ..." lines have other shapes.
    const std::string tail = ": " + path;
    if (line.size() <= tail.size() ||
        line.compare(line.size() - tail.size(), tail.size(), tail) != 0)
      continue;
    std::string name = line.substr(0, line.size() - tail.size());
    if (name.rfind("diversion by ", 0) == 0) continue;
    name = name.substr(0, name.find_first_of(",:"));
    // Debian policy 5.6.1: [a-z0-9][a-z0-9+.-]+
    bool ok = name.size() >= 2 && name.size() <= 100;
    for (std::size_t i = 0; ok && i < name.size(); ++i) {
      const char c = name[i];
      ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (i > 0 && (c == '+' || c == '.' || c == '-'));
    }
    if (ok) return name;
  }
  return {};
}

}  // namespace ngxtls::model
