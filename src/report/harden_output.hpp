#pragma once
// Output of `ngxtls harden`: a commented nginx snippet (text) and its JSON record.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "harden/harden.hpp"

namespace ngxtls::report {

/// How to lay out the text snippet.
struct harden_text_options {
  /// true: wrap everything in `http { ... }` after the header comments (what the CLI prints);
  /// false: the http-level lines and the `server { ... }` block only, to paste into an
  /// existing http block (tests embed it in a full nginx.conf).
  bool http_block = true;
  /// Print the header comments (profile, versions, warnings, notes, rotation procedure,
  /// differences from the guideline) before the config.
  bool header = true;
};

/// The snippet as nginx configuration text: every directive followed by `# reason`, comment-only
/// lines as `# reason`; http lines first, then `server { ... }`. Every non-comment line is a
/// directive that nginx parses as is; each --upstream adds `upstream NAME { ... }` after the http
/// lines and `location PATH { ... }` inside the server block. Never contains key bytes.
std::string harden_text(const harden::snippet& s, const harden_text_options& options = {});

/// The JSON record: {"profile", "guideline", "guideline_url", "nginx_version",
/// "openssl_version", "tickets", "ocsp", "stapling", "ticket_key_dir", "session_cache_mb",
/// "lines": [{"context", "directive" (null for a comment), "reason"}], "upstreams": [{"name",
/// "location", "upstream": lines of the block, "location_lines": lines of the location}],
/// "warnings", "notes",
/// "rotation": [{"title", "commands", "why"}], "differences": [{"topic", "mozilla", "ngxtls",
/// "why"}], "config": the text of harden_text without header, "project_config": the
/// .ngxtls.toml the versions may come from, or null}.
nlohmann::json harden_json(const harden::snippet& s,
                           const std::optional<std::string>& project_config = std::nullopt);

}  // namespace ngxtls::report
