#pragma once
// Prometheus text exposition format 0.0.4 for the exporter: metric families with HELP and TYPE
// lines, escaped label values, and the metrics of one probe result as /probe serves them.
// https://prometheus.io/docs/instrumenting/exposition_formats/

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probe/measurement.hpp"
#include "probe/results.hpp"

namespace ngxtls::serve {

/// The Content-Type of the text format.
inline constexpr const char* exposition_content_type = "text/plain; version=0.0.4; charset=utf-8";

/// Label name -> value pairs of one sample, in the order written.
using probe::label_set;

/// The kind of a metric family (the TYPE line).
enum class metric_type { gauge, counter, histogram };

/// One metric family: its samples are written under one HELP and one TYPE line.
class metric_family {
 public:
  /// `name` follows Prometheus's naming conventions (base units, `_total` for counters).
  metric_family(std::string name, metric_type type, std::string help);
  /// Adds a sample `name+suffix{labels} value` (`suffix` is "_bucket", "_sum" or "_count" for
  /// histograms, else empty).
  void add(const label_set& labels, double value, std::string_view suffix = "");
  /// True when no sample was added.
  bool empty() const { return lines_.empty(); }
  /// Appends HELP, TYPE and the samples to `out` (nothing when empty).
  void write(std::string& out) const;

 private:
  std::string name_, help_;
  metric_type type_;
  std::vector<std::string> lines_;
};

/// A sample value as the text format writes it: shortest round-trip form, NaN, +Inf, -Inf.
using probe::sample_value;

/// What /probe serves for one result: the families of `probe --format prometheus`
/// (report::probe_prometheus, the one writer) without a target label (Prometheus's relabelling
/// sets `instance`, as for blackbox_exporter), with the probe's duration as the exporter
/// measured it and the age of the result (ngxtls_probe_result_age_seconds).
/// `age_seconds`: 0 for a result measured for this request.
std::string probe_exposition(const probe::target_result& result, double duration_seconds,
                             double age_seconds);

}  // namespace ngxtls::serve
