// The headers: the header fields of the first complete response to the probe's `HEAD /`, for
// checks that judge what nginx sends (`check`: Strict-Transport-Security). Not rendered in the
// probe's own reports.
#include "probe/modules/headers.hpp"

#include <algorithm>
#include <cctype>

#include "probe/measurement.hpp"

namespace ngxtls::probe {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

class headers final : public measurement {
 public:
  std::string_view name() const override { return "headers"; }

  void on_connection(target_state& t, module_state*, run_state*,
                     const connection& c) const override {
    if (!c.handshake_ok || !c.head_complete || !t.res.response_headers.empty()) return;
    t.res.response_headers = parse_response_head(c.response_head);
  }
};

}  // namespace

const measurement& headers_module() {
  static const headers m;
  return m;
}

std::optional<std::string> header_value(
    const std::vector<std::pair<std::string, std::string>>& headers, std::string_view name) {
  auto lower = [](char c) { return std::tolower(static_cast<unsigned char>(c)); };
  for (const auto& [n, v] : headers)
    if (n.size() == name.size() && std::equal(n.begin(), n.end(), name.begin(),
                                              [&](char a, char b) { return lower(a) == lower(b); }))
      return v;
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> parse_response_head(std::string_view head) {
  std::vector<std::pair<std::string, std::string>> out;
  bool status_line = true;
  while (!head.empty()) {
    const auto eol = head.find('\n');
    std::string_view line = head.substr(0, eol);
    head = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // the end of the header section
    if (status_line) {
      status_line = false;
      continue;
    }
    if (line.front() == ' ' || line.front() == '\t') continue;  // obsolete line folding
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) continue;
    out.emplace_back(std::string(trim(line.substr(0, colon))),
                     std::string(trim(line.substr(colon + 1))));
  }
  return out;
}

}  // namespace ngxtls::probe
