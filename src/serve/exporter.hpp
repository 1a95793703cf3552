#pragma once
// The exporter's core, apart from HTTP: one probe per scrape under the bounds of the config
// (probes in flight, one probe per target at a time, a minimum interval per target and module
// with the last result served from a cache in between), and its own metrics.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "probe/results.hpp"
#include "serve/serve_config.hpp"

namespace ngxtls::serve {

/// The longest `target=` value accepted, bytes (a DNS name is at most 253; a port and
/// `https://` add a few).
inline constexpr std::size_t max_target_bytes = 300;

/// One /probe request.
struct probe_request {
  std::string target;  ///< `target=` value: host, host:port, [v6]:port or https://host[:port]/
  std::string module;  ///< `module=` value; "" selects "default"
  /// X-Prometheus-Scrape-Timeout-Seconds as sent (may be absent or malformed: the config's
  /// default_scrape_timeout_ms then applies).
  std::optional<std::string> scrape_timeout_header;
  /// `sni=`: the server name to send instead of the module's or the target's.
  std::optional<std::string> sni;
  /// `connect=`: the address to dial (addr, addr:port, [v6]:port) instead of the target's host,
  /// itself within the allow list; the target's name is still sent as SNI.
  std::optional<std::string> connect;
  /// `protocol=`: `tls1.2` or `tls1.3`, one of the protocols the module probes.
  std::optional<std::string> protocol;
  /// `debug=true`: answer with the probe's log as text instead of the metrics.
  bool debug = false;
  /// When the request arrived (the scrape's deadline counts from here); now when unset.
  std::optional<std::chrono::steady_clock::time_point> received;
};

/// Why a request was answered with an error status (the `reason` label of
/// ngxtls_serve_requests_rejected_total).
enum class reject_reason { bad_target, unknown_module, not_allowed, busy };

/// The reason as its label value: "bad_target", "unknown_module", "not_allowed", "busy".
const char* to_string(reject_reason r);

/// What to answer: an HTTP status, a Content-Type and a body.
struct http_answer {
  int status = 200;
  std::string content_type;
  std::string body;
};

/// Runs probes for scrapes and keeps the exporter's metrics. Thread-safe: one object serves
/// every HTTP worker thread.
class exporter {
 public:
  /// Probes run through probe::run_probe. `log` receives one line per failed probe
  /// (default: stderr).
  explicit exporter(serve_config config, std::function<void(const std::string&)> log = nullptr);

  /// Replaces the config (SIGHUP). Cached results are dropped: a module's options may differ.
  void reload(serve_config config);

  /// The current config (a snapshot).
  std::shared_ptr<const serve_config> config() const;

  /// Answers one /probe request: 200 with the probe's metrics (probe_success 0 when the target
  /// could not be probed to the end), or with `debug` the probe's log as text; 400 for a
  /// malformed target, sni, connect or protocol or an unknown module, 403 for a target or
  /// connect address outside the allow list, 503 when no probe could start before the
  /// scrape's deadline.
  /// Never waits past the scrape's timeout minus the configured margin.
  http_answer probe(const probe_request& request);

  /// The exporter's own metrics (/metrics).
  std::string metrics() const;

  /// Counts a reload that failed (`ok` false) for ngxtls_serve_config_reloads_total;
  /// reload() counts the successful ones itself.
  void count_reload(bool ok);

 private:
  struct stored {
    probe::target_result result;
    double duration_seconds = 0;
    std::chrono::steady_clock::time_point finished;
  };
  struct entry {
    std::shared_ptr<const stored> last;
    bool running = false;
    std::chrono::steady_clock::time_point used;
  };

  http_answer reject(reject_reason why, int status, const std::string& text);
  void evict_locked();
  void record(const std::string& module, bool ok, double seconds);

  std::function<void(const std::string&)> log_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::shared_ptr<const serve_config> config_;
  std::uint64_t generation_ = 0;        // bumped by reload(): results of older probes are not kept
  std::map<std::string, entry> cache_;  // module + target -> last result
  std::set<std::string> running_targets_;
  int in_flight_ = 0;

  // Own metrics.
  std::map<std::pair<std::string, bool>, std::uint64_t> probes_total_;  // (module, ok)
  std::vector<std::uint64_t> duration_buckets_;
  double duration_sum_ = 0;
  std::uint64_t duration_count_ = 0;
  std::uint64_t cache_hits_ = 0;
  std::map<reject_reason, std::uint64_t> rejected_;
  std::uint64_t reloads_ok_ = 0, reloads_failed_ = 0;
  double start_time_ = 0;
};

}  // namespace ngxtls::serve
