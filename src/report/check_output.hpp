#pragma once
// `ngxtls check` reports: lint findings with their verdicts, and the probe results in full.

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "check/check.hpp"
#include "probe/results.hpp"
#include "report/lint_output.hpp"

namespace ngxtls::report {

/// What `check --sandbox` ran and changed, for the report.
struct sandbox_summary {
  std::string nginx_binary;    ///< path of the nginx that ran
  std::string nginx_version;   ///< its `nginx -v` line
  int instances = 1;           ///< masters on each port (reuseport)
  int workers = 1;             ///< worker processes per master
  bool pid_namespace = false;  ///< teardown held by a PID namespace (else process groups)
  bool reload = false;         ///< sessions were taken before a reload and offered after it
  /// Per served socket: {configured "address:port", sandbox "127.0.0.1:port"}.
  std::vector<std::pair<std::string, std::string>> sockets;
  /// {server label, what the sandbox changed or could not test}; empty label = the whole sandbox.
  std::vector<std::pair<std::string, std::string>> notes;
  /// {server label, why it was not started}.
  std::vector<std::pair<std::string, std::string>> untested;
};

/// `check --sandbox`'s `nginx -t` of the whole config (sandbox::whole_config_test).
struct nginx_test_summary {
  std::string verdict;    ///< "passed", "rejected", "not_testable" or "skipped"
  source_location where;  ///< rejected / not_testable: the operator's FILE:LINE; else empty
  std::string message;    ///< nginx's [emerg] message; skipped: why the test did not run
  std::string reason;     ///< not_testable: why the message is not the config's verdict
};

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
/// reason}) and `sandbox` ({nginx_binary, nginx_version,
/// instances, workers, pid_namespace, reload, sockets: [{configured, sandbox}], notes: [{server,
/// text}], untested: [{server, reason}]}).
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
