#pragma once
// The exporter's HTTP endpoints on GNU libmicrohttpd: /probe, /metrics, /-/healthy and an index
// page, behind optional TLS and basic auth from Prometheus's web configuration file.
// Clients talk to the front (serve/front.hpp), which owns their connections, TLS, deadlines
// and connection slots, and checks every request head strictly before libmicrohttpd parses
// it; one polling thread in libmicrohttpd answers checked requests, and requests that may take
// long (a probe, a bcrypt check) are suspended and handed to a pool of http_threads workers, so
// idle or slow clients hold no thread. docs/limits.md lists the bounds.

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "serve/exporter.hpp"
#include "serve/front.hpp"
#include "serve/request_head.hpp"
#include "serve/web_config.hpp"

namespace ngxtls::serve {

/// Where to listen: an IPv4 address or `[v6]`, and a port.
struct listen_address {
  std::string host = "127.0.0.1";  ///< IPv6 without brackets
  int port = 10924;                ///< outside Prometheus's allocated exporter range 9100-9999
};

/// True when `host` (IPv6 without brackets) is a loopback address (127.0.0.0/8, ::1): only
/// processes on this host can reach a socket bound there.
bool is_loopback_address(const std::string& host);

/// The default --listen value, "127.0.0.1:10924".
inline constexpr const char* default_listen = "127.0.0.1:10924";

/// Parses `ADDR:PORT` or `[V6]:PORT` (ADDR a numeric address; no names, so that what is bound is
/// what was written). Throws ngxtls::usage_error when malformed.
listen_address parse_listen_address(const std::string& text);

/// One HTTP(S) server for an exporter. Construct, then run() blocks until stop().
class http_server {
 public:
  /// `web`: TLS and basic auth (nullopt: plain HTTP, no authentication). Throws
  /// ngxtls::input_error when the certificate or key cannot be loaded.
  http_server(exporter& core, const std::optional<web_config>& web);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Binds `where`. Throws ngxtls::usage_error when the address cannot be bound.
  /// Returns the port bound (the one asked for, or the kernel's choice for port 0).
  int bind(const listen_address& where);
  /// Serves until stop(); returns after the requests being served have been answered.
  void run();
  /// Stops accepting and makes run() return (async-signal-safe it is not: call it from a
  /// thread, e.g. the one that waits for SIGTERM).
  void stop();
  /// Replaces the basic auth users (SIGHUP reloads the web configuration file).
  void set_users(std::map<std::string, std::string> users);
  /// Applies a reloaded config's HTTP settings at once: `http_threads` (workers are added, or
  /// leave after their current request), `http_read_timeout_ms` and `http_header_timeout_ms`
  /// (every connection's next check uses them).
  void apply(const serve_config& config);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace ngxtls::serve
