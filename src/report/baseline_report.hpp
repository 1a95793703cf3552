#pragma once
// The findings baseline (`lint --baseline-report PREVIOUS`): a report of an earlier run,
// SARIF or ngxtls JSON, whose findings are not reported again. Places are matched by
// fingerprint (report/fingerprint.hpp), so a finding whose line moved stays suppressed.

#include <set>
#include <string>

#include "report/lint_output.hpp"

namespace ngxtls::report {

/// Largest previous report read, bytes: a SARIF log of 100,000 findings is about 150 MB.
inline constexpr std::size_t max_baseline_report_bytes = std::size_t{512} << 20;

/// The place fingerprints of a previous report: SARIF 2.1.0 (`runs[].results[]
/// .partialFingerprints["ngxtlsPlace/v1"]`) or `lint --format json` (`findings[]
/// .fingerprints[]`), told apart by their top-level keys. `name` labels errors. Throws
/// input_error when `text` is not JSON, is neither shape, or carries no ngxtls fingerprint
/// at all while it has results (a report of another tool, or of a version without them).
std::set<std::string> baseline_fingerprints(const std::string& text, const std::string& name);

/// Reads `path` bounded by max_baseline_report_bytes (regular files only) and returns
/// baseline_fingerprints() of it. Throws input_error when it cannot be read.
std::set<std::string> read_baseline_report(const std::string& path);

/// Removes from `r` every place whose fingerprint is in `known` (a finding all of whose places
/// are known goes; one with some left keeps those, the first left becoming its location),
/// keeps r.fingerprints aligned, and returns how many places were removed. Needs
/// r.fingerprints worked out (report::fingerprints).
std::size_t apply_baseline(lint_report& r, const std::set<std::string>& known);

}  // namespace ngxtls::report
