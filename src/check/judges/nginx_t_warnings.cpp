// The judge of probe question nginx_t_warnings.

#include <algorithm>
#include <string>
#include <vector>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

// Whether nginx -t's [warn] lines can confirm a finding of question `q`.
bool answered_by_warning(engine::probe_question q) {
  return q == engine::probe_question::nginx_t_warns_at_line ||
         q == engine::probe_question::socket_options_warned ||
         q == engine::probe_question::handshake_under_name;
}

// nginx -t's own word, where it warns about what the finding says.
bool nginx_t_warning(checked_finding& c, engine::probe_question q, const judge_options& o) {
  const auto& f = c.finding;
  for (const auto& w : o.warnings) {
    bool hit = false;
    if (q == engine::probe_question::socket_options_warned ||
        q == engine::probe_question::handshake_under_name)
      hit = w.message.find("protocol options redefined") != std::string::npos && w.port != 0 &&
            std::find(f.ports.begin(), f.ports.end(), w.port) != f.ports.end();
    else if (q == engine::probe_question::nginx_t_warns_at_line)
      hit = !w.where.file.empty() && w.where.same_line(f.location) &&
            w.message.find("deprecated") != std::string::npos;
    if (!hit) continue;
    c.result = verdict::confirmed;
    c.reason = "nginx -t warns: " + w.message;
    c.evidence.push_back({"nginx -t", "[warn] " + w.message, ""});
    return true;
  }
  return false;
}

}  // namespace ngxtls::check::judges
