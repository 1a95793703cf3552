#pragma once
// Lint reports: human text and the JSON record documented in docs/lint-json.md.

#include <string>
#include <vector>

#include "engine/finding.hpp"
#include "model/version.hpp"

namespace ngxtls::report {

/// Everything a lint run reports.
struct lint_report {
  std::vector<std::string> inputs;          ///< configs linted, as given
  model::assumed_versions assumed;          ///< versions the defaults were resolved for, and why
  std::vector<engine::finding> findings;    ///< sorted by file, line, column, rule
};

/// Text for a terminal: one block per finding (location, severity, rule, message, evidence,
/// fix), then a summary line. `color` adds ANSI colors (only on a TTY).
std::string render_text(const lint_report& r, bool color);

/// The JSON record (docs/lint-json.md): top-level `findings` (each `rule`, `severity`,
/// `message`, `location` {file, line, column}, `include_chain` [{file, line}], `evidence`
/// [{name, value, origin, location?}], `fix`, `server`), `assumed` {nginx, nginx_source,
/// openssl, openssl_source}, `summary` {error, warning, note}, `inputs`. Pretty-printed.
std::string render_json(const lint_report& r);

}  // namespace ngxtls::report
