// The judge of probe question tls13_resumes.

#include <string>
#include <vector>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

void tls13_resumes(checked_finding& c, const std::vector<const probe::target_result*>& rs,
                   const judge_options& o) {
  int attempts = 0, resumed = 0, tickets = 0;
  for (const auto* r : rs)
    if (const auto* run = find_run(*r, "TLSv1.3", "ticket")) {
      attempts += run->attempts;
      resumed += run->resumed;
      tickets += run->tickets;
      c.evidence.push_back({"TLSv1.3 resumed", frac(run->resumed, run->attempts), label(*r)});
      c.evidence.push_back({"TLSv1.3 tickets",
                            std::to_string(run->tickets) + ", " +
                                std::to_string(run->stateful_tickets) + " of them stateful",
                            label(*r)});
    }
  const bool note = c.finding.level == engine::severity::note;
  if (attempts == 0) {
    bool served = false;
    for (const auto* r : rs) served = served || find_run(*r, "TLSv1.3", "ticket");
    if (served && tickets == 0) {
      // TLS 1.3 handshakes completed and not one ticket came: nothing to resume with.
      c.result = note ? verdict::refuted : verdict::confirmed;
      c.reason = "TLS 1.3 is served but no session ticket arrived: no client can resume";
    } else {
      c.reason = served ? "no TLS 1.3 resumption attempt completed"
                        : "TLS 1.3 was not negotiated on the probed sockets (not enabled, or the "
                          "probe failed)";
    }
    return;
  }
  if (note && o.several_endpoints) {
    // A cache that lives in one instance: sessions resume only when they return to it.
    c.result = resumed < attempts ? verdict::confirmed : verdict::refuted;
    c.reason = resumed < attempts
                   ? "across the instances TLS 1.3 resumed " + frac(resumed, attempts) +
                         ": only on the instance that holds the session"
                   : "every instance resumed every session (" + frac(resumed, attempts) + ")";
    return;
  }
  if (note) {
    c.result = resumed > 0 ? verdict::confirmed : verdict::refuted;
    c.reason = resumed > 0
                   ? "TLS 1.3 resumes through the session cache (" + frac(resumed, attempts) + ")"
                   : "TLS 1.3 did not resume at all (" + frac(resumed, attempts) + ")";
    return;
  }
  if (resumed == 0 && tickets > 0) {
    c.result = verdict::confirmed;
    c.reason = "TLS 1.3 resumed " + frac(resumed, attempts) + " although " +
               std::to_string(tickets) + " tickets arrived";
  } else if (resumed > 0) {
    c.result = verdict::refuted;
    c.reason = "TLS 1.3 resumed " + frac(resumed, attempts);
  } else {
    c.reason = "no TLS 1.3 ticket arrived, so resumption could not be tried";
  }
}

}  // namespace ngxtls::check::judges
