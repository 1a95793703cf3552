#pragma once
// Which endpoints `ngxtls serve` may probe: host patterns with ports, from its config's `allow`
// list. Without it the exporter would reach any host a scraper names.

#include <string>
#include <string_view>
#include <vector>

namespace ngxtls::serve {

/// One allow-list entry: `HOST:PORTS`. HOST is a DNS name or IP literal (`[v6]` for IPv6),
/// `*.suffix` (any name that ends in `.suffix`, one label or more) or `*` (any host); PORTS is
/// a port, a range `A-B` or `*`. Hosts compare in their canonical_host() spelling.
struct allow_pattern {
  std::string text;  ///< as written in the config
  std::string host;  ///< lower case; "*" or "*.suffix" for wildcards, IPv6 without brackets
  int port_min = 0;  ///< first allowed port (1..65535)
  int port_max = 0;  ///< last allowed port (inclusive)
};

/// Parses one entry. Throws std::invalid_argument with a one-line reason when it is malformed
/// (no port, a port outside 1..65535, a `*` anywhere but a whole leading label).
allow_pattern parse_allow_pattern(std::string_view text);

/// The spelling of `host` (IPv6 without brackets) that every other spelling of the same name
/// shares: lower case, no trailing dot, an IPv6 literal in its RFC 5952 form (`0:0::1` and
/// `::1` are one). The allow list, the result cache and the one-probe-per-endpoint rule key on it.
std::string canonical_host(const std::string& host);

/// True when `host` (as a target names it, IPv6 without brackets) and `port` match one of
/// `patterns`. An empty list allows nothing.
bool allowed(const std::vector<allow_pattern>& patterns, const std::string& host, int port);

}  // namespace ngxtls::serve
