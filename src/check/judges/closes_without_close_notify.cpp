// The judge of probe question closes_without_close_notify.

#include <string>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

// tls-return-444 from how the server ended the probe's connections (probe::close_part):
// connections closed without close_notify, and clients that read to EOF resuming less than the
// prober, confirm it; every connection ended with close_notify refutes it.
void closes_without_close_notify(checked_finding& c, const results& rs) {
  int unclean = 0, clean = 0, strict_attempts = 0, strict_resumed = 0, attempts = 0, resumed = 0;
  for (const auto* r : rs)
    for (const auto& run : r->protocols) {
      unclean += run.closes_eof + run.closes_reset;
      clean += run.closes_close_notify;
      if (run.strict_measured) {
        strict_attempts += run.strict_attempts;
        strict_resumed += run.strict_resumed;
        attempts += run.attempts;
        resumed += run.resumed;
      }
    }
  c.evidence.push_back(
      {"closed without close_notify", frac(unclean, unclean + clean) + " connections", ""});
  if (strict_attempts > 0)
    c.evidence.push_back(
        {"strict client resumed",
         frac(strict_resumed, strict_attempts) + " (prober: " + frac(resumed, attempts) + ")", ""});
  if (unclean + clean == 0) {
    c.reason = "no response was read to its end (the probe sends no HTTP request with --no-http)";
  } else if (unclean > 0 && strict_attempts > 0 &&
             strict_resumed * attempts < resumed * strict_attempts) {
    c.result = verdict::confirmed;
    c.reason = "connections end without close_notify, and clients that read to EOF resume " +
               frac(strict_resumed, strict_attempts);
  } else if (unclean == 0) {
    c.result = verdict::refuted;
    c.reason = "every connection ended with close_notify";
  } else {
    c.reason = "connections end without close_notify, but the strict client resumed as often";
  }
}

}  // namespace ngxtls::check::judges
