// The judge of probe question early_data_replayed.

#include <string>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

// early-data-replay from the probe's 0-RTT offers (probe_options::early_data, check
// --sandbox): a replayed first flight accepted and answered (any status but 425 Too Early)
// confirms it; replays refused, or answered 425, refute it. The probe sends `HEAD /` only, and
// the sandbox answers it from its own `location /`: the verdict is about nginx accepting the
// replay on the finding's socket. Which locations pass $ssl_early_data on, the finding's own
// subject, comes from the configuration; the rule's handled notes ask no question.
void early_data_replayed(checked_finding& c, const results& rs) {
  int tried = 0, answered = 0, refused = 0, too_early = 0;
  for (const auto* r : rs) {
    const auto* run = find_run(*r, "TLSv1.3", "ticket");
    if (run == nullptr || !run->early_data_tried) continue;
    ++tried;
    const auto& rep = run->early_replay;
    const bool accepted =
        rep.outcome == probe::early_data_outcome::accepted || run->early_parallel_accepted > 0;
    if (run->early_replay_answered)
      ++answered;
    else if (!accepted)
      ++refused;
    else
      ++too_early;
    c.evidence.push_back(
        {"replayed early data",
         probe::to_string(rep.outcome) + ", HTTP " +
             (rep.http_status ? std::to_string(*rep.http_status) : std::string("none")) + "; " +
             frac(run->early_parallel_accepted, run->early_parallel_sent) + " accepted at once",
         label(*r)});
  }
  if (tried == 0) {
    c.reason =
        "no early data was sent (the probe sends 0-RTT only in check --sandbox, and only "
        "where TLS 1.3 tickets allow early data)";
  } else if (answered > 0) {
    c.result = verdict::confirmed;
    c.reason =
        "a replayed 0-RTT HEAD / was accepted and answered, not refused with 425 Too Early (the "
        "probe sees nginx's answer to HEAD /, not which locations pass $ssl_early_data on)";
  } else {
    c.result = verdict::refuted;
    c.reason = refused > 0 && too_early == 0
                   ? "the server refused the replayed early data"
                   : "replayed early data is answered 425 Too Early at HEAD /";
  }
}

}  // namespace ngxtls::check::judges
