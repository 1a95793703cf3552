#pragma once
// The lint pipeline that `lint`, `check` and `harden` share: the project's .ngxtls.toml, the
// assumed versions, the inputs read and modelled, the options the rules run with, the findings.
// One set-up, so that every command honours the same settings in the same way.

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"
#include "engine/engine.hpp"
#include "engine/finding.hpp"
#include "engine/project_config.hpp"
#include "model/model.hpp"
#include "model/version.hpp"

namespace ngxtls::engine {

/// One line for the user's stderr (which .ngxtls.toml is used, or why one was ignored). The
/// text may hold file names as found on disk: the caller makes it safe for a terminal.
using message_sink = std::function<void(std::string_view)>;

/// How the installed nginx is asked for its version. The engine runs no process itself: the
/// command line passes runners (src/cli), tests may pass their own; empty functions mean
/// "cannot tell".
struct nginx_inspector {
  std::string binary = "nginx";  ///< the nginx whose version is detected (`check --sandbox`'s)
  /// `binary -V`'s output (nginx prints it to stderr), "" when it cannot run.
  std::function<std::string(const std::string& binary)> version_output;
  /// The distribution's package version of `binary` (distributions backport fixes under the
  /// old upstream version), "" when unknown.
  std::function<std::string(const std::string& binary)> package_version;
};

/// Loads one input: a path (a plain config or a saved `nginx -T` dump) or "-" (stdin, either
/// kind, read bounded by opts.max_file_bytes). Throws input_error.
config::config load_input(const std::string& path, const config::load_options& opts);

/// The project's .ngxtls.toml: `explicit_path` (--config) when given, else the one
/// find_project_config() finds from the working directory. Says through `say`, one line, which
/// file is used (`using config FILE`), or why a file found was ignored (`warning: ignoring
/// FILE: ...`). Throws input_error for a bad file (rule ids are checked against `catalog`).
std::optional<project_config> load_project(const std::string& explicit_path,
                                           const rule_catalog& catalog, const message_sink& say);

/// The assumed versions: flags (`nginx_flag`, `openssl_flag`; empty when not given), else
/// .ngxtls.toml, else `nginx -V` through `nginx`, else the newest known nginx and the linked
/// libssl. Throws usage_error for unparseable values.
model::assumed_versions choose_versions(const std::string& nginx_flag,
                                        const std::string& openssl_flag,
                                        const std::optional<project_config>& pc,
                                        const nginx_inspector& nginx);

/// A finding present, or at another severity, on one nginx version but not the other.
struct version_difference {
  std::string rule;
  source_location location;
  std::optional<severity> on_assumed;  ///< its severity on the assumed version, or absent
  std::optional<severity> on_older;    ///< its severity on the older version, or absent
};

/// When the nginx version was neither given nor detected: the older measured version the
/// findings were also computed for, and what differs there.
struct version_notice {
  model::version older;
  std::vector<version_difference> differences;
};

/// What to lint and how: the command line's paths and flags.
struct lint_request {
  std::string command = "lint";     ///< names the command in usage errors
  std::vector<std::string> paths;   ///< configs, saved dumps, "-" (stdin, once); empty: the
                                    ///< .ngxtls.toml fleet, linted as a fleet
  bool fleet = false;               ///< --fleet: the configs are instances of one service
  std::string project_config_path;  ///< --config; empty: found from the working directory
  std::string conf_prefix;          ///< --conf-prefix; empty: the main file's directory
  std::string nginx_version;        ///< --nginx-version; empty: not given
  std::string openssl_version;      ///< --openssl-version; empty: not given
  std::vector<std::string> select;  ///< --select (replaces .ngxtls.toml's select)
  std::vector<std::string> ignore;  ///< --ignore (added to .ngxtls.toml's ignore)
  std::string baseline;             ///< --baseline; empty: none
  bool strict_files = false;        ///< --strict-files (or .ngxtls.toml's strict_files)
  /// --context: the block site files are read in (config::load_options::site_context).
  std::optional<config::implied_context> site_context;
  bool notice_older_version = true;  ///< compute the version notice when nginx is only assumed
};

struct lint_run;

/// What the command that asked lends the pipeline.
struct lint_hooks {
  message_sink say;       ///< stderr lines; none: silent
  nginx_inspector nginx;  ///< how nginx -V is run
  /// Called once every input is read and modelled, before any rule runs: the command refuses
  /// what it cannot do with these inputs (an output file that is one of them, a fix written
  /// into a dump) before the run's time is spent.
  std::function<void(const lint_run&)> after_load;
  /// Called after each step of the run: `step` "read" (input `done` of `total` read and
  /// modelled) or "linted" (rules run over input `done` of `total`). For a progress count.
  std::function<void(const char* step, std::size_t done, std::size_t total)> progress;
};

/// Everything one run of the pipeline made. Models point into their configs, and the options
/// into the models: keep the value whole (it may be moved, its parts are on the heap).
struct lint_run {
  std::optional<project_config> project;  ///< the .ngxtls.toml read, if any
  model::assumed_versions assumed;        ///< versions the defaults were resolved for, and why
  std::vector<std::string> inputs;        ///< the paths linted, as given (or the fleet's)
  bool fleet = false;                     ///< linted as a fleet
  lint_options options;                   ///< what the rules ran with
  std::vector<std::unique_ptr<config::config>> configs;  ///< one per input
  std::vector<std::unique_ptr<model::model>> models;     ///< one per input
  std::unique_ptr<config::config> baseline_config;       ///< --baseline's, or null
  std::unique_ptr<model::model> baseline_model;          ///< --baseline's, or null
  std::vector<std::vector<finding>> findings;            ///< per input, as run() sorts them
  /// Findings past the caps, per rule id, summed over the inputs (run_counted()).
  std::map<std::string, std::size_t> dropped_per_rule;
  /// Set when the nginx version is only assumed and the request asked for it.
  std::optional<version_notice> notice;
};

/// The lint pipeline: reads the project's .ngxtls.toml (load_project()), chooses the versions
/// (choose_versions()), builds the options from the flags and the file (select, ignore,
/// severity overrides, strict_files, expiry_days, [load], modules, fleet), reads and models each
/// input and the baseline, runs `catalog` over each model, and, when the nginx version is only
/// assumed, the notice of what differs on the oldest measured nginx. Throws usage_error for bad
/// flags (an unknown rule id, stdin twice, no input) and input_error for bad inputs.
lint_run lint(const lint_request& request, const rule_catalog& catalog, const lint_hooks& hooks);

}  // namespace ngxtls::engine
