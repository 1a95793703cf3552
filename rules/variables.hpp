#pragma once
// The variable names nginx knows in a configuration: built in (measured per context), or made by
// the configuration itself (map, geo, set, named regex captures, ...). nginx refuses a
// configuration whose ssl_certificate or ssl_certificate_key names a variable it does not know
// (docs/nginx-facts.md#unknown-variable).

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.hpp"

namespace ngxtls::rules {

/// One `$name` or `${name}` in an nginx complex value, name lowercased (nginx looks variables
/// up case-insensitively). `$1`..`$9` (regex captures) are not listed.
std::vector<std::string> referenced_variables(std::string_view value);

/// True when nginx (1.22.1, 1.26.3 or 1.30.6, any of them) has variable `name` (lowercase)
/// built in for `c` (http or stream), by name or by prefix (`http_`, `cookie_`, `arg_`, ...).
/// Mail has no variables.
bool builtin_variable(std::string_view name, model::context_kind c);

/// The variables a configuration makes in one http or stream block, for deciding which names
/// nginx would refuse there.
struct defined_variables {
  /// False when something may define variables that lint cannot see (a loaded or declared
  /// module whose variables were not measured): then no name can be called unknown.
  bool complete = true;
  /// Names made by map, geo, split_clients, set, perl_set, js_set, auth_request_set, the
  /// set_by_lua / ndk set_* family, a `$name` directive (geoip2 blocks), an argument of a
  /// directive nginx's table does not hold, and named captures of any regex (lowercase).
  std::set<std::string> names;
  /// True when nginx knows `name` (lowercase) in block context `c`: built in or made here.
  bool known(const std::string& name, model::context_kind c) const;
};

/// defined_variables of `block` (a top-level http or stream block directive), with the modules
/// the configuration loads and `.ngxtls.toml` declares; worked out once per run. For any other
/// block: an incomplete set (every name may be known).
const defined_variables& variables_of(const engine::context& ctx, const config::directive& block);

}  // namespace ngxtls::rules
