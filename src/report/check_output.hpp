#pragma once
// `ngxtls check` reports: lint findings with their verdicts, and the probe results in full.

#include <string>
#include <vector>

#include "check/check.hpp"
#include "probe/results.hpp"
#include "report/lint_output.hpp"

namespace ngxtls::report {

/// Everything a check run reports.
struct check_report {
  lint_report lint;                              ///< findings in the same order as `checked`
  std::vector<check::checked_finding> checked;   ///< one per finding, with its verdict
  std::vector<probe::target_result> probes;      ///< every target probed
  std::vector<std::string> key_names;            ///< which configured key file sealed the live tickets
  std::vector<std::string> notes;                ///< what was not tested and why
};

/// Text: per finding its location, rule and message, then one line `verdict: reason` and the
/// probe numbers; then the key-name lines and a summary.
std::string render_check_text(const check_report& r, bool color);

/// JSON: the lint record (docs/lint-json.md) where each finding gains `verdict`
/// ("confirmed" / "refuted" / "not_testable"), `verdict_reason` and `probe_evidence`
/// ([{name, value, target}]); plus `probe` (the probe record of docs/probe-json.md),
/// `key_names` and `notes`.
std::string render_check_json(const check_report& r);

}  // namespace ngxtls::report
