#pragma once
// Helpers shared by the rule files: evidence from effective values, socket grouping.

#include <map>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "engine/file_facts.hpp"

namespace ngxtls::rules {

/// Evidence for one effective setting of a server: "name", its arguments joined by spaces,
/// its origin ("server" / "http" / "stream" / "default") and location. An unset directive
/// without default gives value "(not set)".
engine::evidence setting_evidence(const engine::context& ctx, const model::server& s,
                                  const std::string& name);

/// "example.com" (first server_name), or "server at FILE:LINE" when it has none.
std::string server_label(const engine::context& ctx, const model::server& s);

/// The ssl listen sockets grouped by their default server: default server index ->
/// the sockets it is default for (DESIGN fact 6: those sockets take its cache and keys).
std::map<std::size_t, std::vector<const model::listen_socket*>> ssl_sockets_by_default(
    const model::model& m);

/// "*:443, [::]:443".
std::string socket_names(const std::vector<const model::listen_socket*>& sockets);

/// True when the assumed OpenSSL and nginx can speak TLS 1.3 and the setting enables it.
bool tls13_enabled(const model::model& m, const model::server& s);

/// Where a finding caused by an absent directive points: the server's first `listen ... ssl`,
/// else the server directive itself.
const config::directive* default_anchor(const model::server& s);

/// True when the argument names a file chosen at run time (`$variable`) or inline (`data:`),
/// which cannot be inspected statically.
bool dynamic_path(const std::string& arg);

}  // namespace ngxtls::rules
