// The load module: renders the load driver's figures (probe/load.hpp) as text, verdicts, JSON
// and Prometheus metrics. It folds no probe connection: the driver fills its part.
#include "probe/load.hpp"

#include <cstdio>

#include "probe/measurement.hpp"

namespace ngxtls::probe {
namespace {

// "1,610": whole connections per second with thousands separators.
std::string per_s(double v) {
  auto n = static_cast<long long>(v + 0.5);
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string fixed(double v, const char* fmt) {
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string percent(double fraction) {
  return (fraction >= 0 ? "+" : "") + fixed(fraction * 100.0, "%.0f") + "%";
}

nlohmann::json quantiles_json(const timing_ms& t) {
  if (t.count == 0) return {{"count", 0}, {"median", nullptr}, {"p90", nullptr}, {"p99", nullptr}};
  return {{"count", t.count}, {"median", t.median}, {"p90", t.p90}, {"p99", t.p99}};
}

std::string quantiles_text(const char* what, const timing_ms& t) {
  return std::string(what) + " " + fixed(t.median, "%.2f") + "/" + fixed(t.p90, "%.2f") + "/" +
         fixed(t.p99, "%.2f") + " ms";
}

std::string resumption_sentence(const resumption_price& p) {
  return "fixing resumption (" + phase_label(p.resumed) + ") raises this endpoint's handshake " +
         "capacity from " + per_s(p.today_per_s) + "/s (at the measured " +
         fixed(p.resumption_rate * 100.0, "%.0f") + "% resumption) to " +
         per_s(p.full_resumption_per_s) + "/s: " + percent(p.gain);
}

std::string certificate_sentence(const certificate_price& c) {
  std::string head = "full-handshake capacity by certificate (" + phase_label(c.phase) +
                     "): ECDSA " + per_s(c.ecdsa_per_s) + "/s, RSA " + per_s(c.rsa_per_s) + "/s: ";
  if (c.gain > 0) return head + "an ECDSA certificate raises it by " + percent(c.gain);
  return head + "ECDSA measured no faster here (" + percent(c.gain) + ")";
}

// Median, p90 and p99 of `t` in seconds, labelled `stat` (not `quantile`: that label is a
// summary's).
void quantile_metrics(metric_set& m, const char* family, const label_set& l, const timing_ms& t) {
  if (t.count == 0) return;
  m.add(family, with_label(l, "stat", "median"), t.median / 1000.0);
  m.add(family, with_label(l, "stat", "p90"), t.p90 / 1000.0);
  m.add(family, with_label(l, "stat", "p99"), t.p99 / 1000.0);
}

// Why a phase has no figures, or what cut it short; empty for a phase that ran.
std::string state_text(load_phase_state s) {
  switch (s) {
    case load_phase_state::ran:
      return "";
    case load_phase_state::interrupted:
      return "stopped by Ctrl-C or SIGTERM";
    case load_phase_state::server_stopped:
      return "the server stopped answering";
    case load_phase_state::not_run_interrupted:
      return "not run: Ctrl-C or SIGTERM came first";
    case load_phase_state::not_run_unanswered:
      return "not run: the server did not answer a handshake before it";
    case load_phase_state::not_run_no_session:
      return "not run: the handshake before it gave no session to offer";
  }
  return "";
}

bool not_run(load_phase_state s) {
  return s == load_phase_state::not_run_interrupted || s == load_phase_state::not_run_unanswered ||
         s == load_phase_state::not_run_no_session;
}

class load final : public measurement {
 public:
  std::string_view name() const override { return "load"; }

  void target_verdicts(const target_result& t, std::vector<std::string>& out) const override {
    if (!t.load) return;
    for (const auto& p : t.load->prices)
      if (p.resumption_rate < 1.0) out.push_back(resumption_sentence(p));
    if (t.load->certificate) out.push_back(certificate_sentence(*t.load->certificate));
    for (const auto& p : t.load->phases)
      if (p.client_bound) {
        out.push_back("load: the client's CPU was the limit in " + phase_label(p.kind, p.key) +
                      " (" + fixed(p.client_cpu_share * 100.0, "%.0f") +
                      "% busy): the server may do more than measured");
        break;
      }
    int unmeasured_phases = 0;
    for (const auto& p : t.load->phases) unmeasured_phases += unmeasured(p) ? 1 : 0;
    if (unmeasured_phases > 0)
      out.push_back("load: " + std::to_string(unmeasured_phases) + " of " +
                    std::to_string(t.load->phases.size()) + " phases could not be measured");
    if (t.load->interrupted) out.push_back("load: interrupted; the figures are partial");
  }

  void target_text(const target_result& t, text_sink& s) const override {
    if (!t.load) return;
    const auto& l = *t.load;
    s.out << "  load: " << l.duration_s << " s per phase, " << l.concurrency << " in flight, "
          << l.client_threads << (l.client_threads == 1 ? " client thread" : " client threads");
    if (l.max_rate) s.out << ", at most " << per_s(*l.max_rate) << " connections/s";
    if (l.request) s.out << ", one HEAD / per connection";
    if (l.quic_concurrency > 0) s.out << "; QUIC " << l.quic_concurrency << " in flight";
    if (l.interrupted) s.out << " (interrupted)";
    s.out << "\n";
    for (const auto& p : l.phases) {
      if (not_run(p.state)) {
        s.out << "    " << phase_label(p.kind, p.key) << ": " << state_text(p.state);
        if (p.last_error) s.out << " (" << s.safe(*p.last_error) << ")";
        s.out << "\n";
        continue;
      }
      s.out << "    " << phase_label(p.kind, p.key) << ": " << per_s(p.connections_per_s)
            << " connections/s (" << p.connections << " in " << fixed(p.elapsed_s, "%.1f") << " s";
      if (is_resumed(p.kind)) s.out << ", " << p.resumed << " resumed";
      s.out << ", " << p.failures << (p.failures == 1 ? " failure" : " failures") << ")";
      if (p.handshake_ms.count > 0) {
        s.out << "; ";
        // QUIC has no connect of its own: its handshake starts with the first Initial.
        if (p.connect_ms.count > 0) s.out << quantiles_text("connect", p.connect_ms) << ", ";
        s.out << quantiles_text("handshake", p.handshake_ms);
        if (p.first_byte_ms.count > 0)
          s.out << ", " << quantiles_text("first byte", p.first_byte_ms);
        s.out << " (median/p90/p99)";
      }
      s.out << "; client CPU " << fixed(p.client_cpu_share * 100.0, "%.0f") << "%";
      if (p.client_bound) s.out << " (the client was the limit)";
      if (p.state != load_phase_state::ran) s.out << "; " << state_text(p.state);
      s.out << "\n";
      if (p.failures > 0 && p.last_error)
        s.out << "      last failure: " << s.safe(*p.last_error) << "\n";
    }
    for (const auto& p : l.prices) {
      s.out << "    ratio " << phase_label(p.resumed) << " / " << phase_label(p.full) << ": "
            << fixed(p.full_per_s > 0 ? p.resumed_per_s / p.full_per_s : 0, "%.2f") << "x; "
            << resumption_sentence(p) << "\n";
    }
    if (l.certificate) s.out << "    " << certificate_sentence(*l.certificate) << "\n";
  }

  void target_json(const target_result& t, nlohmann::json& out) const override {
    if (!t.load) return;
    const auto& l = *t.load;
    nlohmann::json j = {{"duration_s", l.duration_s},
                        {"concurrency", l.concurrency},
                        {"max_rate_per_s", l.max_rate ? nlohmann::json(*l.max_rate) : nullptr},
                        {"request", l.request},
                        {"client_threads", l.client_threads},
                        {"quic_concurrency", l.quic_concurrency},
                        {"interrupted", l.interrupted}};
    j["phases"] = nlohmann::json::array();
    for (const auto& p : l.phases)
      j["phases"].push_back({{"phase", to_string(p.kind)},
                             {"certificate_key", to_string(p.key)},
                             {"state", to_string(p.state)},
                             {"measured", !unmeasured(p)},
                             {"elapsed_s", p.elapsed_s},
                             {"connections", p.connections},
                             {"resumed", p.resumed},
                             {"failures", p.failures},
                             {"last_error", p.last_error ? nlohmann::json(*p.last_error) : nullptr},
                             {"connections_per_s", p.connections_per_s},
                             {"connect_ms", quantiles_json(p.connect_ms)},
                             {"handshake_ms", quantiles_json(p.handshake_ms)},
                             {"first_byte_ms", quantiles_json(p.first_byte_ms)},
                             {"client_cpu_share", p.client_cpu_share},
                             {"client_bound", p.client_bound}});
    j["prices"] = nlohmann::json::array();
    for (const auto& p : l.prices)
      j["prices"].push_back({{"full_phase", to_string(p.full)},
                             {"resumed_phase", to_string(p.resumed)},
                             {"resumption_rate", p.resumption_rate},
                             {"full_per_s", p.full_per_s},
                             {"resumed_per_s", p.resumed_per_s},
                             {"today_per_s", p.today_per_s},
                             {"full_resumption_per_s", p.full_resumption_per_s},
                             {"gain", p.gain}});
    if (l.certificate)
      j["certificate"] = {{"phase", to_string(l.certificate->phase)},
                          {"ecdsa_per_s", l.certificate->ecdsa_per_s},
                          {"rsa_per_s", l.certificate->rsa_per_s},
                          {"gain", l.certificate->gain}};
    else
      j["certificate"] = nullptr;
    out["load"] = std::move(j);
  }

  void declare_metrics(metric_set& m) const override {
    m.declare("ngxtls_load_connections_per_second",
              "Connections per second completed in a load phase");
    m.declare("ngxtls_load_failures", "Connections that failed in a load phase");
    m.declare("ngxtls_load_phase_measured",
              "1 when a planned load phase gave figures, 0 when it did not run, the server "
              "stopped answering in it or no connection completed");
    m.declare("ngxtls_load_phase_duration_seconds",
              "How long a load phase ran (until its end, Ctrl-C or SIGTERM, or the server "
              "stopping)");
    m.declare("ngxtls_load_connect_seconds",
              "TCP connect time in a load phase, by stat (median, p90, p99)");
    m.declare("ngxtls_load_handshake_seconds", "TLS handshake time in a load phase, by stat");
    m.declare("ngxtls_load_first_byte_seconds", "Request to first byte in a load phase, by stat");
    m.declare("ngxtls_load_client_cpu_ratio", "Client CPU use in a load phase (0..1)");
    m.declare("ngxtls_load_capacity_per_second",
              "Handshake capacity at the measured resumption rate (at=\"today\") and at full "
              "resumption (at=\"full_resumption\")");
    m.declare("ngxtls_load_certificate_capacity_per_second",
              "Full-handshake capacity with ECDSA or RSA certificates only");
  }

  void target_metrics(const target_result& t, const label_set& labels,
                      metric_set& m) const override {
    if (!t.load) return;
    for (const auto& p : t.load->phases) {
      const label_set l = with_label(with_label(labels, "phase", to_string(p.kind)),
                                     "certificate_key", to_string(p.key));
      m.add("ngxtls_load_connections_per_second", l, p.connections_per_s);
      m.add("ngxtls_load_failures", l, p.failures);
      m.add("ngxtls_load_phase_measured", l, unmeasured(p) ? 0 : 1);
      m.add("ngxtls_load_phase_duration_seconds", l, p.elapsed_s);
      quantile_metrics(m, "ngxtls_load_connect_seconds", l, p.connect_ms);
      quantile_metrics(m, "ngxtls_load_handshake_seconds", l, p.handshake_ms);
      quantile_metrics(m, "ngxtls_load_first_byte_seconds", l, p.first_byte_ms);
      m.add("ngxtls_load_client_cpu_ratio", l, p.client_cpu_share);
    }
    for (const auto& p : t.load->prices) {
      const label_set l = with_label(labels, "resumed_phase", to_string(p.resumed));
      m.add("ngxtls_load_capacity_per_second", with_label(l, "at", "today"), p.today_per_s);
      m.add("ngxtls_load_capacity_per_second", with_label(l, "at", "full_resumption"),
            p.full_resumption_per_s);
    }
    if (const auto& c = t.load->certificate) {
      const label_set l = with_label(labels, "phase", to_string(c->phase));
      m.add("ngxtls_load_certificate_capacity_per_second",
            with_label(l, "certificate_key", "ecdsa"), c->ecdsa_per_s);
      m.add("ngxtls_load_certificate_capacity_per_second", with_label(l, "certificate_key", "rsa"),
            c->rsa_per_s);
    }
  }
};

}  // namespace

/// The load module's registry entry.
const measurement& load_module() {
  static const load m;
  return m;
}

}  // namespace ngxtls::probe
