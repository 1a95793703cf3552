#pragma once
// One file per subcommand. Each registers its CLI11 subcommand and returns the exit code
// through the callback it installs.

#include <CLI/CLI.hpp>

namespace ngxtls::cli {

/// Exit codes (docs/exit-codes.md): 0 clean, 1 findings at or above --fail-on,
/// 2 usage or input error, 3 a target could not be probed, 130 a load stopped by Ctrl-C (its
/// partial report is written).
enum exit_code : int {
  exit_ok = 0,
  exit_findings = 1,
  exit_input = 2,
  exit_target = 3,
  exit_interrupted = 130
};

/// Each register_* adds its subcommand to `app`; when that subcommand is chosen,
/// `run` is set to a function returning the process exit code.
void register_lint(CLI::App& app, std::function<int()>& run);
void register_parse(CLI::App& app, std::function<int()>& run);
void register_probe(CLI::App& app, std::function<int()>& run);
void register_serve(CLI::App& app, std::function<int()>& run);
void register_rules(CLI::App& app, std::function<int()>& run);
void register_harden(CLI::App& app, std::function<int()>& run);
void register_check(CLI::App& app, std::function<int()>& run);
/// `completion SHELL`: reads `app` when run, so register it after every other subcommand.
void register_completion(CLI::App& app, std::function<int()>& run);

}  // namespace ngxtls::cli
