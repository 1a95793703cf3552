#include "probe/target.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

#include "base/error.hpp"

namespace ngxtls::probe {
namespace {

int parse_port(std::string_view s, std::string_view whole) {
  int port = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || port < 1 || port > 65535)
    throw usage_error("bad port in target \"" + std::string(whole) + "\"");
  return port;
}

// Splits "host", "host:port", "[v6]", "[v6]:port" or a bare IPv6 literal.
void split_host_port(std::string_view s, std::string_view whole, std::string& host, int& port) {
  if (!s.empty() && s.front() == '[') {
    auto close = s.find(']');
    if (close == std::string_view::npos)
      throw usage_error("missing ']' in target \"" + std::string(whole) + "\"");
    host = std::string(s.substr(1, close - 1));
    auto rest = s.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':')
        throw usage_error("unexpected text after ']' in target \"" + std::string(whole) + "\"");
      port = parse_port(rest.substr(1), whole);
    }
  } else if (std::count(s.begin(), s.end(), ':') > 1) {
    host = std::string(s);  // bare IPv6 literal, no port
    in6_addr a6{};
    const std::string addr = host.substr(0, host.find('%'));  // fe80::1%eth0: a zone id
    if (inet_pton(AF_INET6, addr.c_str(), &a6) != 1)
      throw usage_error("bad target \"" + std::string(whole) +
                        "\": more than one ':' but not an IPv6 address (write [v6]:port)");
  } else if (auto colon = s.find(':'); colon != std::string_view::npos) {
    host = std::string(s.substr(0, colon));
    port = parse_port(s.substr(colon + 1), whole);
  } else {
    host = std::string(s);
  }
  if (host.empty()) throw usage_error("empty host in target \"" + std::string(whole) + "\"");
}

}  // namespace

bool is_ip_literal(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

target parse_target(std::string_view text, const std::optional<std::string>& sni,
                    const std::optional<std::string>& connect) {
  target t;
  t.text = std::string(text);
  std::string_view s = text;
  if (auto scheme = s.find("://"); scheme != std::string_view::npos) {
    auto name = s.substr(0, scheme);
    if (name != "https" && name != "HTTPS")
      throw usage_error("unsupported scheme in target \"" + t.text + "\" (only https://)");
    s = s.substr(scheme + 3);
    if (auto slash = s.find('/'); slash != std::string_view::npos) s = s.substr(0, slash);
  }
  if (s.empty()) throw usage_error("empty target");
  // user:password@ is nothing a TLS probe sends, and errors quote the target: say so without
  // quoting what stands before the '@' (it may be a password, and stderr may be a CI log).
  if (auto at = s.rfind('@'); at != std::string_view::npos)
    throw usage_error("target \"..." + std::string(s.substr(at)) +
                      "\": user info (user:password@) is not supported; it is not shown here");
  split_host_port(s, text, t.host, t.port);
  t.sni = sni ? *sni : (is_ip_literal(t.host) ? std::string() : t.host);
  t.connect_host = t.host;
  t.connect_port = t.port;
  if (connect) {
    t.connect_port = t.port;
    split_host_port(*connect, *connect, t.connect_host, t.connect_port);
  }
  return t;
}

}  // namespace ngxtls::probe
