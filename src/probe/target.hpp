#pragma once
// Probe targets: what the user typed (`host`, `host:port`, `[v6]:port`, `https://host[:port]/`)
// turned into a host, a port, the SNI to send and the address to dial.

#include <optional>
#include <string>
#include <string_view>

namespace ngxtls::probe {

/// One endpoint to probe.
struct target {
  std::string text;          ///< as the user gave it (used as the `target` label in every output)
  std::string host;          ///< host name or IP literal, without IPv6 brackets
  int port = 443;            ///< TCP port (1..65535); 443 when not given
  std::string sni;           ///< server name to send; empty = no SNI (IP literal host and no --sni)
  std::string connect_host;  ///< where to dial: `host` unless --connect named another address
  int connect_port = 443;    ///< port to dial: `port` unless --connect named another one
};

/// Parses `text` as `host`, `host:port`, `[v6]`, `[v6]:port`, a bare IPv6 literal, or
/// `https://host[:port][/path]` (the path is ignored). `sni`, when set, replaces the default
/// SNI (the host, or none for an IP literal). `connect`, when set (`addr`, `addr:port` or
/// `[v6]:port`), is dialled instead of the host while the target's SNI is still sent: it
/// probes one backend behind a name. Throws ngxtls::usage_error for an empty host, a bad
/// port or an unsupported scheme.
target parse_target(std::string_view text, const std::optional<std::string>& sni = std::nullopt,
                    const std::optional<std::string>& connect = std::nullopt);

/// True when `host` is an IPv4 or IPv6 literal (no SNI is sent for those by default,
/// RFC 6066 section 3).
bool is_ip_literal(const std::string& host);

}  // namespace ngxtls::probe
