#pragma once
// `ngxtls check` reports: lint findings with their verdicts, and the probe results in full.

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "check/check.hpp"
#include "check/workflow.hpp"
#include "probe/results.hpp"
#include "report/lint_output.hpp"

namespace ngxtls::report {

/// What `check --sandbox` ran and changed (check/workflow.hpp).
using sandbox_summary = check::sandbox_summary;
/// `check --sandbox`'s `nginx -t` of the whole config (check/workflow.hpp).
using nginx_test_summary = check::nginx_test_summary;

/// Everything a check run reports.
struct check_report {
  /// Findings in the same order as `checked`: the lint findings, then those only the probe
  /// made (check::probe_findings).
  lint_report lint;
  std::vector<check::checked_finding> checked;  ///< one per finding, with its verdict
  std::vector<probe::target_result> probes;     ///< every target probed
  std::vector<std::string> key_names;  ///< which configured key file sealed the live tickets
  std::vector<std::string> notes;      ///< what was not tested and why
  /// What stops nginx and no lint finding predicted (check --sandbox: nginx -t rejections).
  std::vector<std::string> errors;
  std::optional<sandbox_summary> sandbox;  ///< set by `check --sandbox`
  /// `check --sandbox`: the TLS upstreams measured through stand-ins (and priced with --load).
  std::vector<check::upstream_measurement> upstreams;
  /// `check --sandbox`: the QUIC probe of each QUIC socket served (only `quic` set per target).
  std::vector<probe::target_result> quic_probes;
  /// Set by `check --sandbox` when the sandbox ran: shown before the findings.
  std::optional<nginx_test_summary> nginx_test;
};

/// Text: with --sandbox first nginx -t's verdict on the whole config; per finding its location,
/// rule and message, then one line `verdict: reason` and the
/// probe numbers; then the key-name lines and a summary.
std::string render_check_text(const check_report& r, bool color);
/// render_check_text() written to `out`.
void write_check_text(const check_report& r, bool color, std::ostream& out);

/// JSON: the lint record (docs/lint-json.md) where each finding gains `verdict`
/// ("confirmed" / "refuted" / "not_testable"), `verdict_reason` and `probe_evidence`
/// ([{name, value, target}]); plus `probe` (the probe record of docs/probe-json.md),
/// `key_names`, `notes`, `errors`, with --sandbox `nginx_test` ({verdict, location, message,
/// reason}), `upstreams` (docs/check-json.md), `quic_probe` (the probe record of the QUIC
/// sockets served, each target's `quic` as docs/probe-json.md has it) and `sandbox` ({nginx_binary,
/// nginx_version, instances, workers, pid_namespace, reload, sockets: [{configured, sandbox}],
/// notes: [{server, text}], untested: [{server, reason}]}).
std::string render_check_json(const check_report& r);
/// render_check_json() written to `out` a finding at a time (lint's streamed record with the
/// check's fields merged in: report/lint_output.hpp, json_additions).
void write_check_json(const check_report& r, std::ostream& out);

/// SARIF 2.1.0 as render_sarif (sarif_output.hpp), each result's `properties` gaining
/// `verdict`, `verdict_reason` and `probe_evidence`; refuted findings are lowered to level
/// "note" (the probe contradicts them) with the lint level kept as `properties.lint_level`.
/// The run's `properties` gain `sandbox` and `nginx_test` (as in the JSON), `check_notes` and
/// `check_errors`.
std::string render_check_sarif(const check_report& r, const std::string& working_dir);
/// render_check_sarif() written to `out` a result at a time (write_sarif_sorted).
void write_check_sarif(const check_report& r, const std::string& working_dir, std::ostream& out);

}  // namespace ngxtls::report
