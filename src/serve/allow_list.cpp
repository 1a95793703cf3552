#include "serve/allow_list.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

namespace ngxtls::serve {

namespace {

int port_number(std::string_view s, std::string_view whole) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty() || v < 1 || v > 65535)
    throw std::invalid_argument("\"" + std::string(whole) +
                                "\": the port must be a number from 1 to 65535, a range A-B or *");
  return v;
}

}  // namespace

std::string canonical_host(const std::string& host) {
  std::string h = host;
  std::transform(h.begin(), h.end(), h.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (h.size() > 1 && h.back() == '.') h.pop_back();
  in6_addr v6{};
  if (h.find(':') != std::string::npos && h.find('%') == std::string::npos &&
      ::inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    char buf[INET6_ADDRSTRLEN];
    if (::inet_ntop(AF_INET6, &v6, buf, sizeof buf)) h = buf;
  }
  return h;
}

allow_pattern parse_allow_pattern(std::string_view text) {
  allow_pattern p;
  p.text = std::string(text);
  std::string_view host, ports;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw std::invalid_argument("\"" + p.text + "\": an IPv6 entry is written [ADDRESS]:PORTS");
    host = text.substr(1, close - 1);
    ports = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon)
      throw std::invalid_argument("\"" + p.text +
                                  "\": an entry is HOST:PORTS (e.g. \"*.example.com:443\")");
    host = text.substr(0, colon);
    ports = text.substr(colon + 1);
  }
  if (host.empty()) throw std::invalid_argument("\"" + p.text + "\": the host is empty");
  const auto star = host.find('*');
  if (star != std::string_view::npos &&
      !(host == "*" || (star == 0 && host.size() > 2 && host[1] == '.' &&
                        host.find('*', 1) == std::string_view::npos)))
    throw std::invalid_argument("\"" + p.text +
                                "\": a wildcard is a whole leading label (\"*.example.com\") or "
                                "the whole host (\"*\")");
  p.host = canonical_host(std::string(host));
  if (ports == "*") {
    p.port_min = 1;
    p.port_max = 65535;
  } else if (auto dash = ports.find('-'); dash != std::string_view::npos) {
    p.port_min = port_number(ports.substr(0, dash), text);
    p.port_max = port_number(ports.substr(dash + 1), text);
    if (p.port_min > p.port_max)
      throw std::invalid_argument("\"" + p.text + "\": the port range is empty");
  } else {
    p.port_min = p.port_max = port_number(ports, text);
  }
  return p;
}

bool allowed(const std::vector<allow_pattern>& patterns, const std::string& host, int port) {
  const std::string h = canonical_host(host);
  for (const auto& p : patterns) {
    if (port < p.port_min || port > p.port_max) continue;
    if (p.host == "*" || p.host == h) return true;
    if (p.host.size() > 2 && p.host[0] == '*') {
      const std::string_view suffix = std::string_view(p.host).substr(1);  // ".example.com"
      if (h.size() > suffix.size() &&
          h.compare(h.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0)
        return true;
    }
  }
  return false;
}

}  // namespace ngxtls::serve
