#pragma once
// What a rule reports.

#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace ngxtls::engine {

/// Finding severities, highest first. `never` is only a --fail-on threshold.
enum class severity { error = 0, warning = 1, note = 2 };
/// "error", "warning", "note".
std::string to_string(severity s);
/// Parses "error" / "warning" / "note"; nullopt otherwise.
std::optional<severity> parse_severity(const std::string& s);

/// One config fact a finding rests on: a directive's effective value and where it came from.
struct evidence {
  std::string name;    ///< directive or fact name, e.g. "ssl_session_cache"
  std::string value;   ///< effective value as nginx would read it, e.g. "none"
  std::string origin;  ///< "server", "http", "stream", "default", "file", "listen", ...
  std::optional<source_location> where;  ///< null for nginx defaults and measured facts
};

/// One finding.
struct finding {
  std::string rule;
  severity level = severity::warning;
  std::string message;                         ///< one sentence: what is wrong and its effect
  source_location location;                    ///< the causing directive (DESIGN, Model)
  std::vector<source_location> include_chain;  ///< include directives that led there, outermost first
  std::vector<evidence> facts;                 ///< effective values behind the finding
  std::string fix;                             ///< a config snippet that fixes it
  std::string server;                          ///< "name (socket)" for context; may be empty
};

}  // namespace ngxtls::engine
