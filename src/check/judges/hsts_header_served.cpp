// The judge of probe question hsts_header_served.

#include <string>
#include <vector>

#include "check/judges/judges.hpp"
#include "probe/modules/headers.hpp"

namespace ngxtls::check::judges {

// hsts-missing from the headers of the probe's `HEAD /` response (target_result::
// response_headers): the header absent confirms it, present refutes it (an upstream, or a
// module ngxtls does not model, sends it).
void hsts_header_served(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  int read = 0, with = 0;
  for (const auto* r : rs) {
    if (r->response_headers.empty()) continue;
    ++read;
    const auto v = probe::header_value(r->response_headers, "Strict-Transport-Security");
    with += v.has_value();
    c.evidence.push_back({"Strict-Transport-Security", v.value_or("(absent)"), label(*r)});
  }
  if (read == 0) {
    c.reason = "no response headers were read (the probe sends no HTTP request with --no-http)";
  } else if (with == 0) {
    c.result = verdict::confirmed;
    c.reason = "the response to HEAD / has no Strict-Transport-Security header";
  } else {
    c.result = verdict::refuted;
    c.reason = "the response to HEAD / carries Strict-Transport-Security";
  }
}

}  // namespace ngxtls::check::judges
