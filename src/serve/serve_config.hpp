#pragma once
// The `ngxtls serve` configuration file (TOML): the allow list, the exporter's bounds and the
// probe modules a scrape names with `module=NAME` (as blackbox_exporter's modules).
// docs/prometheus.md shows a complete file; docs/limits.md lists the bounds.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probe/prober.hpp"
#include "serve/allow_list.hpp"

namespace ngxtls::serve {

/// The largest serve config read, bytes (the TOML parser's time grows with the square of an
/// array's length; an allow list of a thousand patterns is about 30 KiB).
inline constexpr std::size_t max_serve_config_bytes = std::size_t{256} << 10;

/// One probe module: the prober's options that a scrape selects by name. Its fields start
/// from probe::probe_options' defaults, so `[modules.NAME]` with no keys probes as
/// `ngxtls probe` does.
struct probe_module {
  std::string name;                    ///< the `module=` value that selects it
  probe::probe_options options;        ///< attempts, per_target, tls12/tls13, fresh, ocsp, ...
  std::optional<std::string> sni;      ///< server name to send instead of the target's host
  std::optional<std::string> connect;  ///< dial this address (addr[:port]) instead of the host
};

/// The whole file. Every key is optional except `allow` (without it nothing may be probed).
struct serve_config {
  std::string path;                             ///< file it was read from ("" = built-in defaults)
  std::vector<allow_pattern> allow;             ///< targets that may be probed
  std::map<std::string, probe_module> modules;  ///< by name; "default" always exists
  int max_probes_in_flight = 8;                 ///< probes running at once, exporter-wide
  int min_interval_seconds = 60;                ///< per target and module: newer results are reused
  std::size_t max_cached_results = 10000;       ///< results kept (the oldest are dropped first)
  int scrape_timeout_margin_ms = 500;           ///< taken off X-Prometheus-Scrape-Timeout-Seconds
  int default_scrape_timeout_ms = 10000;        ///< when a request has no such header (Prometheus'
                                                ///< own default scrape_timeout)
  /// A connection waiting for a request that receives no byte this long is closed.
  int http_read_timeout_ms = 5000;
  /// A request head (TLS handshake included) must be complete this long after the connection
  /// was accepted or its previous answer sent; else 408 and the connection is closed.
  int http_header_timeout_ms = 10000;
  int http_threads = 32;  ///< worker threads for probes and bcrypt checks (requests served at once)
};

/// The configuration used without --config: only a "default" module, and an allow list of
/// `allow` (empty: nothing may be probed).
serve_config default_serve_config();

/// Reads and checks `path`. Throws ngxtls::input_error with file:line:col for a TOML syntax
/// error, an unknown key, a value of the wrong type or out of its range, a bad allow pattern or
/// module name; the file is read with at most max_serve_config_bytes bytes.
serve_config load_serve_config(const std::string& path);

}  // namespace ngxtls::serve
