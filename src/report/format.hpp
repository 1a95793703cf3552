#pragma once
// The report formats: each is one registration (formats/NAME.cpp, listed in formats.cpp) that
// names the format and gives its writer for every command it serves. The command line's
// --format choices and dispatch, and the tests that go over every format, read this list.

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "config/tree.hpp"
#include "harden/harden.hpp"
#include "probe/results.hpp"
#include "report/check_output.hpp"
#include "report/lint_output.hpp"

namespace ngxtls::report {

/// The commands that write a report.
enum class command { lint, check, probe, parse, harden };

/// "lint", "check", "probe", "parse", "harden".
std::string_view to_string(command c);

/// What a writer may need besides the report itself, set by the command line.
struct output_context {
  bool color = false;        ///< ANSI colours: stdout is a terminal and no -o was given
  std::string working_dir;   ///< SARIF and GitHub paths are made relative to it ("" = absolute)
  bool single_file = false;  ///< parse --single-file: files[0] alone
  std::optional<std::string> project_config;  ///< harden: the .ngxtls.toml read, if any
};

/// A writer: streams `report` to `out` (a large report is never one string in memory).
template <typename Report>
using report_writer =
    std::function<void(const Report& report, const output_context& ctx, std::ostream& out)>;

/// One report format: its name and a writer per command it serves (empty: not served).
struct report_format {
  std::string_view name;  ///< the --format value
  report_writer<lint_report> lint;
  report_writer<check_report> check;
  report_writer<std::vector<probe::target_result>> probe;
  report_writer<config::config> parse;
  report_writer<harden::snippet> harden;
  /// parse only: what the format writes for an input error before the error is reported
  /// (crossplane's failed-status record); empty: nothing.
  std::function<void(const input_error& e, std::ostream& out)> parse_error;

  /// True when the format has a writer for `c`.
  bool serves(command c) const;
};

/// Every registered format, in registry order (the order of --format's choices).
const std::vector<const report_format*>& formats();

/// The names of the formats that serve `c`, in registry order.
std::vector<std::string> format_names(command c);

/// The format named `name` that serves `c`. Throws usage_error when there is none (the
/// command line's --format check refuses such a name first).
const report_format& format_for(command c, std::string_view name);

}  // namespace ngxtls::report
