#pragma once
// The headers module's part of a target's result (target_result::response_headers): the
// header fields of the probe's `HEAD /` response, and how they are read.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ngxtls::probe {

/// The value of header `name` (compared case-insensitively) in `headers`, or nullopt.
std::optional<std::string> header_value(
    const std::vector<std::pair<std::string, std::string>>& headers, std::string_view name);

/// The header fields of an HTTP/1.x response head (status line first, lines ending in CRLF,
/// up to the blank line): name and trimmed value of each `name: value` line. Lines without a
/// colon, and obsolete folded continuations, are skipped.
std::vector<std::pair<std::string, std::string>> parse_response_head(std::string_view head);

}  // namespace ngxtls::probe
