#pragma once
// Output of `ngxtls probe`: plain text (verdict lines first, numbers after), the JSON record
// documented in docs/probe-json.md, and the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/) that node_exporter's
// textfile collector reads.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

/// Prometheus text format 0.0.4: gauges with labels (target, protocol, mechanism, mode, ...),
/// no timestamps. Handshake times are in seconds (Prometheus base unit).
std::string probe_prometheus(const std::vector<probe::target_result>& results);

}  // namespace ngxtls::report
