#pragma once
// The exporter's HTTP endpoints on GNU libmicrohttpd: /probe, /metrics, /-/healthy and an index
// page, behind optional TLS and basic auth from Prometheus's web configuration file.
// libmicrohttpd holds the connection-level limits itself (connections, memory per connection,
// idle timeout, one request at a time per connection with pipelined ones answered in order);
// one polling thread serves every connection, and requests that may take long (a probe, a
// bcrypt check) are suspended and handed to a pool of http_threads workers, so idle or slow
// clients hold no thread. docs/limits.md lists the bounds.

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "serve/exporter.hpp"
#include "serve/web_config.hpp"

namespace ngxtls::serve {

/// Where to listen: an IPv4 address or `[v6]`, and a port.
struct listen_address {
  std::string host = "127.0.0.1";  ///< IPv6 without brackets
  int port = 10924;                ///< outside Prometheus's allocated exporter range 9100-9999
};

/// Connections served at once (libmicrohttpd's MHD_OPTION_CONNECTION_LIMIT): while this many are
/// open no more are accepted, and new ones wait in the listen backlog until a slot frees. Each
/// costs a socket and at most max_connection_memory_bytes.
inline constexpr unsigned max_http_connections = 512;

/// Memory per connection for the request line, the header fields and the answer being sent
/// (libmicrohttpd's MHD_OPTION_CONNECTION_MEMORY_LIMIT): a request line that does not fit is
/// answered 414, header fields that do not fit 431.
inline constexpr std::size_t max_connection_memory_bytes = 32 * 1024;

/// Query parameters a request may carry (counted as `&` separators; /probe takes at most six):
/// a request line with more is answered 414 and closed before libmicrohttpd parses them.
inline constexpr long max_query_parameters = 64;

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
  /// Applies a reloaded config's HTTP settings: `http_threads` at once (workers are added, or
  /// leave after their current request), `http_read_timeout_ms` for connections accepted from
  /// now on (libmicrohttpd counts it in whole seconds, rounded up).
  void apply(const serve_config& config);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace ngxtls::serve
