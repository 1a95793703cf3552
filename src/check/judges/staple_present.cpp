// The judge of probe question staple_present.

#include <string>
#include <vector>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

void staple_present(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  if (c.finding.level == engine::severity::note) {
    c.reason = "a resolver hazard: it shows only when DNS fails at load time";
    return;
  }
  int asked = 0, stapled = 0, valid = 0;
  const probe::target_result* bad = nullptr;
  for (const auto* r : rs)
    if (r->ocsp.checked) {
      asked += r->ocsp.connections;
      stapled += r->ocsp.stapled;
      valid += r->ocsp.valid_staples;
      c.evidence.push_back({"OCSP staples", frac(r->ocsp.stapled, r->ocsp.connections), label(*r)});
      if (r->ocsp.stapled > 0)
        c.evidence.push_back(
            {"valid OCSP staples", frac(r->ocsp.valid_staples, r->ocsp.stapled), label(*r)});
      if (r->ocsp.status == probe::ocsp_status::invalid) {
        if (!bad) bad = r;
        c.evidence.push_back(
            {"OCSP staple",
             probe::staple_status_text(r->ocsp) + ": " + r->ocsp.staple_reason.value_or(""),
             label(*r)});
      }
    }
  if (asked == 0) {
    c.reason = "no staple was asked for (--no-ocsp)";
  } else if (stapled == 0) {
    c.result = verdict::confirmed;
    c.reason = "no staple on any of " + std::to_string(asked) + " connections";
  } else if (valid < stapled) {
    // Stapling is not dead, nor does it work: the staple itself is the problem, reported as
    // its own finding (probe_findings).
    c.reason = "a staple arrives on " + frac(stapled, asked) + " connections but " +
               std::to_string(stapled - valid) + " are not valid (" +
               (bad ? probe::staple_status_text(bad->ocsp) : std::string("?")) +
               "): see ocsp-staple-invalid";
  } else {
    c.result = verdict::refuted;
    c.reason = "a valid staple arrived on " + frac(stapled, asked) + " connections";
  }
}

}  // namespace ngxtls::check::judges
