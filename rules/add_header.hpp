#pragma once
// Which `add_header` directives answer a request, level by level, as ngx_http_headers_module
// merges them: shared by the HSTS rules.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.hpp"

namespace ngxtls::rules {

/// The `add_header` directives in effect at one level (http, server, location, `if`).
struct header_level {
  const config::directive* block = nullptr;       ///< the server, location or `if` directive
  std::vector<const config::directive*> headers;  ///< in effect here, in the order nginx adds them
  /// This level's own add_header directives (empty: it inherits, or `add_header_inherit off`).
  std::vector<const config::directive*> own;
  /// This level's own `more_set_headers` directives (headers-more, which merges on its own
  /// terms: rules only look for a header there).
  std::vector<const config::directive*> more_set;
  /// `add_header_inherit` in effect here ("on", "off", "merge"); "on" before nginx 1.29.3.
  std::string_view inherit = "on";
  const config::directive* inherit_where = nullptr;  ///< where that mode was set, or null
};

/// True when `d` is `add_header NAME ...` for `name` (header names compare case-insensitively)
/// with a non-empty value (nginx adds no header whose value is empty).
bool adds_header(const config::directive& d, std::string_view name);

/// True when `headers` holds an add_header for `name`.
bool has_header(const std::vector<const config::directive*>& headers, std::string_view name);

/// True when some location of http server `s` hands requests to a backend (`proxy_pass`,
/// `fastcgi_pass`, `uwsgi_pass`, `scgi_pass`, `grpc_pass`), whose responses may carry headers
/// the config does not add.
bool passes_to_backend(const model::server& s);

/// Where one level loses a header the enclosing level had in effect (add_header inheritance).
struct header_drop {
  const config::directive* inherited = nullptr;  ///< the enclosing level's add_header for it
  /// What drops it: the level's first own add_header, or its `add_header_inherit off`.
  const config::directive* at = nullptr;
  bool by_inherit_off = false;  ///< dropped by `add_header_inherit off` with no add_header
};

/// The drop of header `name` at level `here` below `parent`, or nullopt when `parent` had none
/// in effect or `here` still has one.
std::optional<header_drop> header_dropped(const header_level& here, const header_level& parent,
                                          std::string_view name);

/// How messages name level `here` of server `s`: "this server", or the block as written
/// ("location /static/", "if ($x)").
std::string level_label(const header_level& here, const model::server& s);

/// The arguments of add_header `d` written back as a directive would carry them (each argument
/// with a space, quote or semicolon in double quotes).
std::string add_header_text(const config::directive& d);

/// Visits the server level of http server `s` and then every `location` and `if` block in it
/// (depth first, parents before children) with the add_header list in effect there and that of
/// the enclosing level. A level's own add_header list replaces the inherited one; with
/// `add_header_inherit merge` (nginx 1.29.3 or later, itself inherited) it is appended to the
/// inherited one, and `add_header_inherit off` inherits nothing (nginx docs,
/// ngx_http_headers_module; measured on 1.22.1, 1.26.3 and 1.30.6 by
/// tests/integration/test_hsts_nginx.cpp).
void visit_header_levels(
    const engine::context& ctx, const model::server& s,
    const std::function<void(const header_level& here, const header_level& parent)>& visit);

}  // namespace ngxtls::rules
