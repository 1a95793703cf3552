#include "probe/results.hpp"

#include <algorithm>
#include <cmath>

namespace ngxtls::probe {

std::string to_string(tls_protocol p) {
  return p == tls_protocol::tls1_3 ? "TLSv1.3" : "TLSv1.2";
}

std::string to_string(resumption_mechanism m) {
  return m == resumption_mechanism::ticket ? "ticket" : "session_id";
}

std::string to_string(offer_mode m) {
  return m == offer_mode::same_session ? "same_session" : "fresh_tickets";
}

std::string to_string(session_origin s) {
  return s == session_origin::handshake ? "handshake" : "sess_in";
}

std::string to_string(ocsp_status s) {
  switch (s) {
    case ocsp_status::working:
      return "working";
    case ocsp_status::invalid:
      return "invalid";
    case ocsp_status::absent:
      return "absent";
    case ocsp_status::not_applicable:
      return "not_applicable";
    case ocsp_status::skipped:
      return "skipped";
  }
  return "?";
}

std::string staple_status_text(const ocsp_result& o) {
  return o.staple_status ? tls::to_string(*o.staple_status) : std::string("?");
}

std::string run_label(const run_result& r) {
  if (r.protocol == tls_protocol::tls1_3) return "TLS 1.3";
  return r.mechanism == resumption_mechanism::ticket ? "TLS 1.2 tickets" : "TLS 1.2 session IDs";
}

timing_ms summarize_ms(std::vector<double> samples_ms) {
  timing_ms t;
  t.count = samples_ms.size();
  if (samples_ms.empty()) return t;
  std::sort(samples_ms.begin(), samples_ms.end());
  auto rank = [&](double q) {
    auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(samples_ms.size())));
    return samples_ms[std::clamp<std::size_t>(k, 1, samples_ms.size()) - 1];
  };
  t.median = rank(0.5);
  t.p90 = rank(0.9);
  return t;
}

}  // namespace ngxtls::probe
