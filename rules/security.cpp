#include "rules/security.hpp"

#include <array>
#include <utility>

namespace ngxtls::rules {

namespace {

constexpr std::array<std::pair<std::string_view, double>, 11> scores = {{
    {"private-key-readable", 8.1},
    {"weak-ciphers", 7.5},
    {"weak-key", 7.5},
    {"cross-server-resumption", 6.5},
    {"early-data-replay", 6.5},
    {"legacy-protocols", 5.9},
    {"dhparam-weak", 5.9},
    {"protocols-ignored-per-sni", 5.3},
    {"hsts-missing", 4.3},
    {"hsts-dropped", 4.3},
    {"session-timeout-too-long", 3.1},
}};

}  // namespace

std::optional<double> security_severity(std::string_view rule_id) {
  for (const auto& [id, score] : scores)
    if (id == rule_id) return score;
  return std::nullopt;
}

std::vector<std::string_view> security_rule_ids() {
  std::vector<std::string_view> out;
  for (const auto& [id, score] : scores) out.push_back(id);
  return out;
}

}  // namespace ngxtls::rules
