#include "engine/finding.hpp"

namespace ngxtls::engine {

std::string to_string(severity s) {
  switch (s) {
    case severity::error:
      return "error";
    case severity::warning:
      return "warning";
    case severity::note:
      return "note";
  }
  return "?";
}

std::optional<severity> parse_severity(const std::string& s) {
  if (s == "error") return severity::error;
  if (s == "warning") return severity::warning;
  if (s == "note") return severity::note;
  return std::nullopt;
}

}  // namespace ngxtls::engine
