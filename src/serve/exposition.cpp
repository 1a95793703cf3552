#include "serve/exposition.hpp"

#include <charconv>
#include <cmath>
#include <ctime>

#include "probe/measurement.hpp"

namespace ngxtls::serve {

namespace {

std::string_view type_name(metric_type t) {
  switch (t) {
    case metric_type::gauge:
      return "gauge";
    case metric_type::counter:
      return "counter";
    case metric_type::histogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string sample_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc() ? p : buf);
}

metric_family::metric_family(std::string name, metric_type type, std::string help)
    : name_(std::move(name)), help_(std::move(help)), type_(type) {}

void metric_family::add(const label_set& labels, double value, std::string_view suffix) {
  std::string line = name_;
  line += suffix;
  if (!labels.empty()) {
    line += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i) line += ',';
      line += labels[i].first + "=\"" + probe::label_value(labels[i].second) + "\"";
    }
    line += '}';
  }
  line += ' ';
  line += sample_value(value);
  lines_.push_back(std::move(line));
}

void metric_family::write(std::string& out) const {
  if (lines_.empty()) return;
  out += "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ + " ";
  out += type_name(type_);
  out += '\n';
  for (const auto& l : lines_) out += l + "\n";
}

std::string probe_exposition(const probe::target_result& t, double duration_seconds,
                             double age_seconds) {
  metric_family success("probe_success", metric_type::gauge,
                        "1 when the target was probed to the end, 0 when not");
  metric_family duration("probe_duration_seconds", metric_type::gauge,
                         "How long the probe took, seconds");
  metric_family age("ngxtls_probe_result_age_seconds", metric_type::gauge,
                    "Seconds since the served result was measured (0: measured for this scrape; "
                    "more: reused within min_interval_seconds)");
  metric_family ratio("ngxtls_resumption_ratio", metric_type::gauge,
                      "Resumed attempts / attempts (0..1), by protocol, mechanism and mode");
  metric_family attempts("ngxtls_resumption_attempts", metric_type::gauge,
                         "Resumption attempts that completed a handshake in this probe");
  metric_family resumed("ngxtls_resumption_resumed", metric_type::gauge,
                        "Of those, attempts the server resumed");
  metric_family keys("ngxtls_ticket_key_names", metric_type::gauge,
                     "Distinct session ticket key names seen (one per key domain)");
  metric_family tickets("ngxtls_tickets_per_connection", metric_type::gauge,
                        "Session tickets received per connection");
  metric_family strict("ngxtls_strict_client_resumption_ratio", metric_type::gauge,
                       "Resumed / attempts of a client that reads to EOF without ignoring a "
                       "close without close_notify (0..1)");
  metric_family closes("ngxtls_server_closes", metric_type::gauge,
                       "Connections after a complete response, by how the server closed "
                       "(close: close_notify, eof, reset, not_seen)");
  metric_family handshake("ngxtls_handshake_seconds", metric_type::gauge,
                          "Connect + TLS handshake time by kind (full, resumed) and quantile");
  metric_family stapled("ngxtls_ocsp_stapled_connections", metric_type::gauge,
                        "Connections that carried an OCSP staple");
  metric_family asked("ngxtls_ocsp_checked_connections", metric_type::gauge,
                      "Connections that asked for an OCSP staple");
  metric_family stapling("ngxtls_ocsp_stapling_working", metric_type::gauge,
                         "1 when every staple was valid, 0 when none arrived although the "
                         "certificate names a responder or one was not valid (no sample when "
                         "not applicable)");
  metric_family not_after("ngxtls_certificate_not_after_timestamp_seconds", metric_type::gauge,
                          "The server certificate's notAfter, seconds since the epoch");

  success.add({}, t.error ? 0 : 1);
  duration.add({}, duration_seconds);
  age.add({}, age_seconds);
  for (const auto& r : t.protocols) {
    if (r.connections == 0) continue;
    const label_set l = {{"protocol", probe::to_string(r.protocol)},
                         {"mechanism", probe::to_string(r.mechanism)},
                         {"mode", probe::to_string(r.mode)}};
    if (r.session_offered) {
      ratio.add(l, r.rate);
      attempts.add(l, r.attempts);
      resumed.add(l, r.resumed);
    }
    keys.add(l, static_cast<double>(r.ticket_key_names.size()));
    tickets.add(l, r.tickets_per_connection);
    if (r.strict_measured && r.strict_attempts > 0) strict.add(l, r.strict_rate);
    if (r.closes_close_notify + r.closes_eof + r.closes_reset + r.closes_not_seen > 0) {
      const std::pair<const char*, int> kinds[] = {{"close_notify", r.closes_close_notify},
                                                   {"eof", r.closes_eof},
                                                   {"reset", r.closes_reset},
                                                   {"not_seen", r.closes_not_seen}};
      for (const auto& [kind, n] : kinds) {
        label_set x = l;
        x.emplace_back("close", kind);
        closes.add(x, n);
      }
    }
    auto with = [&l](const char* kind, const char* q) {
      label_set x = l;
      x.emplace_back("kind", kind);
      x.emplace_back("quantile", q);
      return x;
    };
    if (r.full_handshake_ms.count) {
      handshake.add(with("full", "0.5"), r.full_handshake_ms.median / 1000.0);
      handshake.add(with("full", "0.9"), r.full_handshake_ms.p90 / 1000.0);
    }
    if (r.resumed_handshake_ms.count) {
      handshake.add(with("resumed", "0.5"), r.resumed_handshake_ms.median / 1000.0);
      handshake.add(with("resumed", "0.9"), r.resumed_handshake_ms.p90 / 1000.0);
    }
  }
  if (t.ocsp.checked && t.ocsp.connections > 0) {
    stapled.add({}, t.ocsp.stapled);
    asked.add({}, t.ocsp.connections);
    using probe::ocsp_status;
    if (t.ocsp.status == ocsp_status::working || t.ocsp.status == ocsp_status::absent ||
        t.ocsp.status == ocsp_status::invalid)
      stapling.add({}, t.ocsp.status == ocsp_status::working ? 1 : 0);
  }
  if (t.certificate) not_after.add({}, static_cast<double>(t.certificate->not_after_unix));

  std::string out;
  for (const auto* f : {&success, &duration, &age, &ratio, &attempts, &resumed, &keys, &tickets,
                        &strict, &closes, &handshake, &stapled, &asked, &stapling, &not_after})
    f->write(out);
  return out;
}

}  // namespace ngxtls::serve
