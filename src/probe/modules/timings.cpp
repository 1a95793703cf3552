// Where a connection's time goes: TCP connect, TLS handshake and request to first byte, for
// full and resumed handshakes, and the handshake's share of the whole.
#include "probe/modules/timings.hpp"

#include <cstdio>

#include "probe/measurement.hpp"

namespace ngxtls::probe {
namespace {

// The samples of one kind of connection (full or resumed) in one run, ms.
struct samples {
  std::vector<double> handshake_ms;  // connect + TLS handshake
  std::vector<double> connect_ms, tls_handshake_ms, first_byte_ms, total_ms, share;

  void add(const connection& c, bool http) {
    handshake_ms.push_back(ms_between(c.started, *c.handshake_at));
    connect_ms.push_back(ms_between(c.started, *c.connected_at));
    const double tls_ms = ms_between(*c.connected_at, *c.handshake_at);
    tls_handshake_ms.push_back(tls_ms);
    if (c.request_sent_at && c.first_byte_at)
      first_byte_ms.push_back(ms_between(*c.request_sent_at, *c.first_byte_at));
    // The whole: up to the first byte of the answer; without a request, the handshake's end.
    std::optional<time_point> end = http ? c.first_byte_at : c.handshake_at;
    if (!end) return;
    const double total = ms_between(c.started, *end);
    total_ms.push_back(total);
    if (total > 0) share.push_back(tls_ms / total);
  }

  time_split summary() const {
    time_split s;
    s.connect_ms = summarize_ms(connect_ms);
    s.tls_handshake_ms = summarize_ms(tls_handshake_ms);
    s.first_byte_ms = summarize_ms(first_byte_ms);
    s.total_ms = summarize_ms(total_ms);
    if (!share.empty()) s.handshake_share = summarize_ms(share).median;
    return s;
  }
};

struct timings_state final : module_state {
  std::vector<samples> full, resumed;  // by run index
};

nlohmann::json timing_json(const timing_ms& t) {
  if (t.count == 0) return {{"count", 0}, {"median", nullptr}, {"p90", nullptr}};
  return {{"count", t.count}, {"median", t.median}, {"p90", t.p90}};
}

nlohmann::json split_json(const time_split& s) {
  return {{"connect_ms", timing_json(s.connect_ms)},
          {"tls_handshake_ms", timing_json(s.tls_handshake_ms)},
          {"first_byte_ms", timing_json(s.first_byte_ms)},
          {"total_ms", timing_json(s.total_ms)},
          {"handshake_share",
           s.handshake_share ? nlohmann::json(*s.handshake_share) : nlohmann::json(nullptr)}};
}

std::string ms2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

void split_text(const char* kind, const time_split& s, text_sink& out) {
  if (s.connect_ms.count == 0) return;
  auto part = [](const char* what, const timing_ms& t) {
    return std::string(what) + " " + ms2(t.median) + "/" + ms2(t.p90) + " ms";
  };
  out.out << "    " << kind << " (" << s.connect_ms.count << "): " << part("connect", s.connect_ms)
          << ", " << part("TLS handshake", s.tls_handshake_ms);
  if (s.first_byte_ms.count) out.out << ", " << part("first byte", s.first_byte_ms);
  out.out << " (median/p90)";
  if (s.handshake_share) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.0f%%", *s.handshake_share * 100.0);
    out.out << "; TLS handshake " << pct << " of the time";
  }
  out.out << "\n";
}

void quantiles(metric_set& m, const char* family, const std::string& l, const char* kind,
               const timing_ms& t) {
  if (t.count == 0) return;
  const std::string k = l + ",kind=\"" + kind + "\"";
  m.add(family, k + ",quantile=\"0.5\"", t.median / 1000.0);
  m.add(family, k + ",quantile=\"0.9\"", t.p90 / 1000.0);
}

class timings final : public measurement {
 public:
  std::string_view name() const override { return "timings"; }

  std::unique_ptr<module_state> start_target(target_state& t) const override {
    auto s = std::make_unique<timings_state>();
    s->full.resize(t.runs.size());
    s->resumed.resize(t.runs.size());
    return s;
  }

  // Counted: every full handshake of the run (the first, the samples, attempts not resumed)
  // and every resumed attempt; a connection that failed after its handshake counts only as a
  // sample (its handshake stands, its run step does not).
  void on_connection(target_state& t, module_state* state, run_state* run,
                     const connection& c) const override {
    if (run == nullptr || !c.handshake_ok || is_follow_up(c.role)) return;
    if (c.error && c.role != connection_role::sample) return;
    auto& st = *static_cast<timings_state*>(state);
    const auto i = static_cast<std::size_t>(run - t.runs.data());
    (c.reused ? st.resumed : st.full)[i].add(c, t.options->http);
  }

  void finish_run(target_state& t, module_state* state, run_state& run) const override {
    if (state == nullptr) return;
    auto& st = *static_cast<timings_state*>(state);
    const auto i = static_cast<std::size_t>(&run - t.runs.data());
    run.res.full_handshake_ms = summarize_ms(st.full[i].handshake_ms);
    run.res.resumed_handshake_ms = summarize_ms(st.resumed[i].handshake_ms);
    run.res.full_time = st.full[i].summary();
    run.res.resumed_time = st.resumed[i].summary();
  }

  void run_text(const run_result& r, text_sink& s) const override {
    // A run whose connections all failed timed nothing: "0.00 ms" would read as a measurement.
    s.out << "    handshake (connect + TLS): ";
    if (r.full_handshake_ms.count)
      s.out << "full median " << ms2(r.full_handshake_ms.median) << " ms, p90 "
            << ms2(r.full_handshake_ms.p90) << " ms";
    else
      s.out << "no full handshake timed";
    if (r.resumed_handshake_ms.count)
      s.out << "; resumed median " << ms2(r.resumed_handshake_ms.median) << " ms, p90 "
            << ms2(r.resumed_handshake_ms.p90) << " ms";
    s.out << "\n";
    split_text("full", r.full_time, s);
    split_text("resumed", r.resumed_time, s);
  }

  void run_json(const run_result& r, nlohmann::json& p) const override {
    p["full_handshake_ms"] = timing_json(r.full_handshake_ms);
    p["resumed_handshake_ms"] = timing_json(r.resumed_handshake_ms);
    p["timings"] = {{"full", split_json(r.full_time)}, {"resumed", split_json(r.resumed_time)}};
  }

  void declare_metrics(metric_set& m) const override {
    m.declare("ngxtls_probe_handshake_seconds",
              "Connect + TLS handshake time, by kind and quantile");
    m.declare("ngxtls_probe_connect_seconds", "TCP connect time, by kind and quantile");
    m.declare("ngxtls_probe_tls_handshake_seconds",
              "TLS handshake time after the TCP connect, by kind and quantile");
    m.declare("ngxtls_probe_first_byte_seconds",
              "Time from the request to the response's first byte, by kind and quantile");
    m.declare("ngxtls_probe_handshake_share",
              "Median share of the TLS handshake in a connection's time to the first byte (0..1)");
  }

  void run_metrics(const run_result& r, const std::string& l, metric_set& m) const override {
    quantiles(m, "ngxtls_probe_handshake_seconds", l, "full", r.full_handshake_ms);
    quantiles(m, "ngxtls_probe_handshake_seconds", l, "resumed", r.resumed_handshake_ms);
    for (const auto& [kind, s] : {std::pair{"full", &r.full_time}, {"resumed", &r.resumed_time}}) {
      quantiles(m, "ngxtls_probe_connect_seconds", l, kind, s->connect_ms);
      quantiles(m, "ngxtls_probe_tls_handshake_seconds", l, kind, s->tls_handshake_ms);
      quantiles(m, "ngxtls_probe_first_byte_seconds", l, kind, s->first_byte_ms);
      if (s->handshake_share)
        m.add("ngxtls_probe_handshake_share", l + ",kind=\"" + kind + "\"", *s->handshake_share);
    }
  }
};

}  // namespace

/// The timings module (registered in measurements.cpp).
const measurement& timings_module() {
  static const timings m;
  return m;
}

}  // namespace ngxtls::probe
