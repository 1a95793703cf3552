// The judge of probe question session_crosses_names.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

void session_crosses_names(checked_finding& c, const judge_options& o) {
  const auto& f = c.finding;
  int resumed = 0, failed = 0, full = 0;
  std::set<std::string> resumed_in, failed_in;  // protocols
  for (const auto& x : o.crossings) {
    if (!name_matches(f.server, x.to_sni)) continue;
    if (!f.ports.empty() && std::find(f.ports.begin(), f.ports.end(), x.port) == f.ports.end())
      continue;
    c.evidence.push_back({x.protocol + " session from " +
                              (x.from_sni.empty() ? std::string("no SNI") : x.from_sni) +
                              " offered at " + x.to_sni,
                          describe(x), x.target});
    if (!x.taken) continue;
    if (x.resumed > 0) {
      ++resumed;
      resumed_in.insert(x.protocol);
    } else if (x.failed > 0 && x.attempts == 0) {
      ++failed;
      failed_in.insert(x.protocol);
    } else if (x.attempts > 0)
      ++full;
  }
  if (resumed + failed + full == 0) {
    c.reason = o.crossings.empty() ? "no session was offered across server names"
                                   : "no session taken under another name could be offered here";
  } else if (resumed + failed > 0) {
    c.result = verdict::confirmed;
    auto join = [](const std::set<std::string>& ps) {
      std::string out;
      for (const auto& p : ps) out += (out.empty() ? "" : " and ") + p;
      return out;
    };
    c.reason = "sessions taken under another name of the socket, offered here: " +
               (resumed ? join(resumed_in) + " resumed" : std::string()) +
               (resumed && failed ? "; " : "") +
               (failed ? join(failed_in) + " handshakes failed" : std::string());
  } else {
    c.result = verdict::refuted;
    c.reason =
        "a session from another name of the socket gets a full handshake here: sessions do not "
        "cross";
  }
}

}  // namespace ngxtls::check::judges
