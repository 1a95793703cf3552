// The judge of probe question saved_session_resumes.

#include <string>
#include <vector>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

void saved_session_resumes(checked_finding& c, const std::vector<const probe::target_result*>& rs,
                           const judge_options& o) {
  if (!o.session_from_file) {
    c.reason =
        "only a session saved before the change can show it (offer one with --sess-in, or use "
        "--sandbox --baseline)";
    return;
  }
  int attempts = 0, resumed = 0;
  for (const auto* r : rs)
    for (const auto& run : r->protocols)
      if (run.session_source == probe::session_origin::sess_in && !run.error) {
        attempts += run.attempts;
        resumed += run.resumed;
        c.evidence.push_back({probe::to_string(run.protocol) + " saved session resumed",
                              frac(run.resumed, run.attempts), label(*r)});
      }
  if (attempts == 0) {
    c.reason = "the saved session was not offered";
  } else if (resumed == 0) {
    c.result = verdict::confirmed;
    c.reason =
        "the session saved before the deploy no longer resumes (" + frac(resumed, attempts) + ")";
  } else {
    c.result = verdict::refuted;
    c.reason =
        "the session saved before the deploy still resumes (" + frac(resumed, attempts) + ")";
  }
}

}  // namespace ngxtls::check::judges
