// The judge of probe question key_domains.

#include <set>
#include <string>
#include <vector>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

void key_domains(checked_finding& c, const std::vector<const probe::target_result*>& rs,
                 const judge_options& o) {
  std::set<std::string> names;
  int attempts = 0, resumed = 0;
  for (const auto* r : rs)
    for (const auto& run : r->protocols) {
      if (run.mechanism != probe::resumption_mechanism::ticket || run.error || !run.supported)
        continue;
      for (const auto& [n, count] : run.ticket_key_names) names.insert(n);
      attempts += run.attempts;
      resumed += run.resumed;
      c.evidence.push_back({probe::to_string(run.protocol) + " ticket resumed",
                            frac(run.resumed, run.attempts), label(*r)});
    }
  c.evidence.push_back({"ticket key names seen", std::to_string(names.size()), ""});
  if (o.reload) {
    int saved = 0, saved_resumed = 0;
    for (const auto* r : rs)
      for (const auto& run : r->protocols)
        if (run.session_source == probe::session_origin::sess_in && !run.error) {
          saved += run.attempts;
          saved_resumed += run.resumed;
          c.evidence.push_back(
              {probe::to_string(run.protocol) + " session from before the reload resumed",
               frac(run.resumed, run.attempts), label(*r)});
        }
    if (saved > 0 && saved_resumed == 0) {
      c.result = verdict::confirmed;
      c.reason = "sessions taken before `nginx -s reload` resumed " + frac(saved_resumed, saved) +
                 " after it: the reload threw the ticket keys away";
      return;
    }
    if (saved > 0 && !o.several_endpoints) {
      c.reason = "sessions taken before the reload still resumed (" + frac(saved_resumed, saved) +
                 "); the multi-instance hazard needs --instances 2";
      return;
    }
  }
  if (attempts == 0) {
    c.reason = "no ticket resumption attempt completed";
    return;
  }
  if (names.size() > 1 || (resumed > 0 && resumed < attempts)) {
    c.result = verdict::confirmed;
    c.reason = std::to_string(names.size()) +
               " ticket key names live behind this name, ticket resumption " +
               frac(resumed, attempts);
  } else if (o.several_endpoints && names.size() <= 1 && resumed == attempts) {
    c.result = verdict::refuted;
    c.reason = "every endpoint resumed " + frac(resumed, attempts) + " with one ticket key";
  } else {
    c.reason = "one key domain at " + frac(resumed, attempts) +
               " on a single endpoint: the reload and multi-instance hazard is not visible there "
               "(probe every backend, or use --sandbox --instances 2 / --reload)";
  }
}

}  // namespace ngxtls::check::judges
