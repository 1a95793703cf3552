#pragma once
// What the snippet generator (harden.cpp) and its TLS-to-backend half (upstream.cpp, `--upstream`)
// share; not part of harden's public interface.

#include <string>
#include <vector>

#include "harden/harden.hpp"

namespace ngxtls::harden {

/// `v` joined with `sep`.
std::string join(const std::vector<std::string>& v, const std::string& sep);

/// Throws ngxtls::usage_error naming `flag` when `path` holds a control character (it would end
/// a comment line of the snippet), or, when `variables` (the directive reads variables), a `$`.
void check_path(const std::string& flag, const std::string& path, bool variables);

/// The profile's protocols the target nginx and OpenSSL can speak (TLS 1.3 needs nginx >= 1.13.0
/// and OpenSSL >= 1.1.1), in the profile's order; may be empty.
std::vector<std::string> target_protocols(const harden_options& o, const profile& p);

/// Adds an upstream block and a location for each of `o.upstreams` to `s`, with the warnings and
/// notes they need. Throws ngxtls::usage_error for a path holding a control character.
void add_tls_backends(snippet& s, const harden_options& o, const profile& p);

}  // namespace ngxtls::harden
