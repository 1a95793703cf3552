#pragma once
// Pieces shared by the subcommands that read configs: what they lend the lint pipeline
// (engine/pipeline.hpp), writing output.

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"
#include "engine/pipeline.hpp"
#include "model/version.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace ngxtls::cli {

/// How ngxtls asks `binary` (default `nginx` on PATH; `check --sandbox` passes the nginx it
/// runs) for its version: `binary -V`, and the Debian package version when dpkg owns the file.
engine::nginx_inspector nginx_inspector(const std::string& binary = "nginx");

/// Prints a pipeline message on stderr as one line `ngxtls: TEXT`, made safe for a terminal.
void say_on_stderr(std::string_view text);

/// --select and --ignore as lint and check both take them (one rule id list each, comma
/// separated, one value per occurrence so `--select ID conf` does not take the config path).
void add_rule_selection(CLI::App* sub, std::vector<std::string>& select,
                        std::vector<std::string>& ignore);

/// --nginx-version and --openssl-version as lint, check and harden take them: a value given
/// must be one model::version::parse_given() reads ("" included: an empty value is refused
/// at the command line, not taken for a flag that was not given).
void add_version_options(CLI::App* sub, std::string& nginx, std::string& openssl,
                         const std::string& nginx_help, const std::string& openssl_help);

/// --context http|stream|mail as lint and check take it: the block site files are read in;
/// `site_context` is left unset when the option is not given.
void add_context_option(CLI::App* sub, std::optional<config::implied_context>& site_context);

/// The hooks every command that runs the lint pipeline passes: stderr messages and the nginx
/// inspector for `binary`.
engine::lint_hooks lint_hooks(const std::string& binary = "nginx");

/// Writes `text` to `path` ("" or "-" = stdout). Throws usage_error when it cannot, naming
/// the errno (a full disk, a closed pipe): a report that was not written is never a success.
/// A file is written to a new temporary file in its directory, then renamed over `path`: a
/// reader never sees half a report, and a symlink planted at `path` is replaced, not followed.
void write_output(const std::string& path, const std::string& text);
/// Throws usage_error when `output` (-o) is one of the files `configs` were read from (the
/// same file, through any name or link): the report would replace the configuration.
void refuse_output_over_config(const std::string& output,
                               const std::vector<const config::config*>& configs);

/// Lets `write` stream the output to `path` ("" or "-" = stdout) instead of building it in
/// memory first (large reports). Throws usage_error as write_output(path, text).
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write);

/// Replaces the configuration file `path` with `text` (lint --fix=write): through a temporary
/// file and rename in the directory of the file `path` resolves to, so that a config reached
/// through a symlink (sites-enabled/x -> ../sites-available/x) stays one; keeps the file's
/// mode and owner. Throws usage_error when it cannot.
void replace_config_file(const std::string& path, const std::string& text);

/// Points std::cout at a buffer over fd 1 that keeps the errno of the first failed write
/// (iostreams keep only a failbit). Called once at start-up, before anything is printed.
void install_stdout_buffer();
/// Flushes std::cout; throws usage_error "cannot write to stdout: ERRNO TEXT" when any write
/// to it failed (EPIPE from a closed pipe: SIGPIPE is ignored, see main).
void finish_stdout();

/// The directory code scanning paths are relative to: `given` (--project-root; usage_error
/// when it is not a directory), else the nearest directory at or above the working directory
/// that holds `.git` (a git work tree's root: code scanning knows files by their repository
/// path), else the working directory. Absolute; "" when the working directory is unknown.
std::string project_root(const std::string& given);

/// Throws usage_error pointing at --baseline-report when the file given to the config
/// `--baseline` is a report (SARIF or ngxtls JSON), not an nginx config.
void refuse_report_as_config_baseline(const std::string& path);

/// --color auto|always|never, as lint, check and probe take it (default auto).
void add_color_option(CLI::App* sub, std::string& mode);
/// Whether text output gets ANSI colors: `mode` "always" yes, "never" no, "auto" when the
/// output goes to file descriptor `fd` (not to an -o file: `to_file` false), which is a
/// terminal, and NO_COLOR is unset or empty (no-color.org).
bool use_color(const std::string& mode, int fd, bool to_file);

/// True when stdout (fd 1) / stderr (fd 2) is a terminal.
bool is_tty(int fd);

/// One line of progress on stderr ("ngxtls: " and the text), redrawn in place and erased at
/// the end, only when stderr is a terminal: elsewhere nothing is written, so piped or logged
/// stderr stays as it is without progress.
class status_line {
 public:
  status_line();
  ~status_line();
  status_line(const status_line&) = delete;
  status_line& operator=(const status_line&) = delete;
  /// True when stderr is a terminal.
  bool on() const { return on_; }
  /// Draws `text` (made safe for the terminal), unless the line was drawn less than
  /// `min_interval_ms` ago.
  void show(const std::string& text, int min_interval_ms = 0);
  /// Erases the line, when drawn: before other stderr output, and at the end.
  void clear();

 private:
  bool on_ = false;
  bool drawn_ = false;
  long long last_ms_ = -1;  // steady clock, when last drawn
};

}  // namespace ngxtls::cli
