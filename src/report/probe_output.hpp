#pragma once
// Output of `ngxtls probe`: plain text (verdict lines first, numbers after), the JSON record
// documented in docs/probe-json.md, and the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/) that node_exporter's
// textfile collector reads.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "probe/measurement.hpp"
#include "probe/results.hpp"

namespace ngxtls::report {

/// Plain-language verdict lines for one target, most important first, e.g.
/// "TLS 1.3 resumption works: 20 of 20 attempts resumed (stateless tickets, one ticket key)".
/// Never contains secrets.
std::vector<std::string> probe_verdicts(const probe::target_result& result);

/// Text report of every target: per target its verdict lines, then the numbers.
/// `color`: ANSI colors for a terminal (the CLI sets it only when stdout is a TTY).
std::string probe_text(const std::vector<probe::target_result>& results, bool color = false);

/// The JSON record: {"targets": [...]} with the fields of docs/probe-json.md.
nlohmann::json probe_json(const std::vector<probe::target_result>& results);

/// What the Prometheus writer is asked to add to the results.
struct prometheus_options {
  /// Label every sample of a target with `target` (the textfile collector's file holds several
  /// targets); false for one target per scrape (`serve`'s /probe: Prometheus's relabelling sets
  /// `instance`, as for blackbox_exporter).
  bool target_label = true;
  /// The probe's duration as the caller measured it (`serve`: from the scrape's start); none:
  /// the target's elapsed_ms.
  std::optional<double> duration_seconds;
  /// Seconds since the result was measured (`serve`, which may answer from its cache:
  /// ngxtls_probe_result_age_seconds); none: the family is not written.
  std::optional<double> result_age_seconds;
};

/// Prometheus text format 0.0.4, the one metric vocabulary of `probe --format prometheus` and
/// `serve`'s /probe (docs/prometheus.md lists the families): gauges with labels (protocol,
/// mechanism, mode per run, ...), no timestamps, base units (seconds, `_timestamp_seconds`,
/// `_ratio`), so that `promtool check metrics` passes.
std::string probe_prometheus(const std::vector<probe::target_result>& results,
                             const prometheus_options& options = {});

/// The HELP text of ngxtls_build_info (probe_prometheus and `serve`'s /metrics write it).
inline constexpr const char* build_info_help =
    "Always 1: the ngxtls version that measured, and the libssl it runs with";
/// The labels of ngxtls_build_info: `version` (ngxtls) and `openssl_version` (the libssl in use).
probe::label_set build_info_labels();

/// Every family probe_prometheus can write, in output order (with or without samples), with
/// ngxtls_probe_result_age_seconds.
std::vector<std::string> probe_metric_families();

}  // namespace ngxtls::report
