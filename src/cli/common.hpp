#pragma once
// Pieces shared by the subcommands that read configs: loading inputs, choosing the
// assumed versions, writing output.

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "engine/project_config.hpp"
#include "model/version.hpp"

namespace ngxtls::cli {

/// Loads one input: a path (a plain config or a saved `nginx -T` dump) or "-" (stdin, either
/// kind). Throws input_error.
config::config load_input(const std::string& path, const config::load_options& opts);

/// The project's .ngxtls.toml: `explicit_path` (--config) when given, else the one
/// engine::find_project_config() finds from the working directory. Says on stderr, one line,
/// which file is used (`ngxtls: using config FILE`), or why a file found was ignored
/// (`ngxtls: warning: ignoring FILE: ...`). Throws input_error for a bad file.
std::optional<engine::project_config> load_project(const std::string& explicit_path);

/// The assumed versions: flags, else .ngxtls.toml, else `NGINX -V` (`nginx_binary`, default
/// `nginx` on PATH; `check --sandbox` passes the nginx it runs), else the newest known nginx and
/// the linked libssl. Throws usage_error for unparseable values.
model::assumed_versions choose_versions(const std::string& nginx_flag,
                                        const std::string& openssl_flag,
                                        const std::optional<engine::project_config>& pc,
                                        const std::string& nginx_binary = "nginx");

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

/// True when stdout (fd 1) / stderr (fd 2) is a terminal.
bool is_tty(int fd);

}  // namespace ngxtls::cli
