// The judge of probe question session_id_resumption.

#include <string>
#include <vector>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

// docs/nginx-facts.md#session-id-cache: a builtin cache lives in one worker; only that worker
// resumes the session.
void session_id_resumption(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  int attempts = 0, resumed = 0;
  for (const auto* r : rs)
    if (const auto* run = find_run(*r, "TLSv1.2", "session_id")) {
      attempts += run->attempts;
      resumed += run->resumed;
      c.evidence.push_back(
          {"TLSv1.2 session ID resumed", frac(run->resumed, run->attempts), label(*r)});
    }
  if (attempts == 0) {
    c.reason = "no TLS 1.2 session-ID resumption attempt completed";
  } else if (resumed > 0 && resumed < attempts) {
    c.result = verdict::confirmed;
    c.reason = "session-ID resumption " + frac(resumed, attempts) +
               ": only connections that reach the worker holding the session resume";
  } else if (resumed == attempts) {
    c.reason = "every session-ID attempt resumed (" + frac(resumed, attempts) +
               "): under light load one worker may take every connection, which hides the split";
  } else {
    c.reason = "no session-ID attempt resumed (" + frac(resumed, attempts) +
               "): not the per-worker pattern";
  }
}

}  // namespace ngxtls::check::judges
