// The judge of probe question tls12_resumes.

#include <string>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

// No TLS 1.2 session resumes, whichever way it is offered: the ticket run (a client that
// offers the ticket extension falls back to the session ID when no ticket comes) and the
// session-ID run.
void tls12_resumes(checked_finding& c, const results& rs) {
  int attempts = 0, resumed = 0;
  for (const auto* r : rs)
    for (const char* mechanism : {"ticket", "session_id"})
      if (const auto* run = find_run(*r, "TLSv1.2", mechanism)) {
        attempts += run->attempts;
        resumed += run->resumed;
        c.evidence.push_back({std::string("TLSv1.2 ") + mechanism + " resumed",
                              frac(run->resumed, run->attempts), label(*r)});
      }
  if (attempts == 0) {
    c.reason = "no TLS 1.2 resumption attempt completed (TLS 1.2 not negotiated, or not probed)";
  } else if (resumed == 0) {
    c.result = verdict::confirmed;
    c.reason =
        "no TLS 1.2 session resumed (" + frac(resumed, attempts) + ", by ticket and by session ID)";
  } else {
    c.result = verdict::refuted;
    c.reason = "TLS 1.2 resumed " + frac(resumed, attempts);
  }
}

}  // namespace ngxtls::check::judges
