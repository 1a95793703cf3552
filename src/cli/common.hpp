#pragma once
// Pieces shared by the subcommands that read configs: loading inputs, choosing the
// assumed versions, writing output.

#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "config/loader.hpp"
#include "engine/project_config.hpp"
#include "model/version.hpp"

namespace ngxtls::cli {

/// Loads one input: a path (a plain config or a saved `nginx -T` dump) or "-" (stdin, either
/// kind). Throws input_error.
config::config load_input(const std::string& path, const config::load_options& opts);

/// The assumed versions: flags, else .ngxtls.toml, else `NGINX -V` (`nginx_binary`, default
/// `nginx` on PATH; `check --sandbox` passes the nginx it runs), else the newest known nginx and
/// the linked libssl. Throws usage_error for unparseable values.
model::assumed_versions choose_versions(const std::string& nginx_flag, const std::string& openssl_flag,
                                        const std::optional<engine::project_config>& pc,
                                        const std::string& nginx_binary = "nginx");

/// Writes `text` to `path` ("" or "-" = stdout). Throws usage_error when it cannot.
void write_output(const std::string& path, const std::string& text);
/// Lets `write` stream the output to `path` ("" or "-" = stdout) instead of building it in
/// memory first (large reports). Throws usage_error when the file cannot be written.
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write);

/// True when stdout (fd 1) / stderr (fd 2) is a terminal.
bool is_tty(int fd);

}  // namespace ngxtls::cli
