// 0-RTT and its replay (only with --early-data, or in check --sandbox): a full handshake gives
// a fresh ticket that allows early data; the request (`HEAD /`, no body) then goes as early
// data with that ticket, again with the same ticket after that, and from two connections at
// once. A server that accepts the second and third flights lets anyone who recorded the first
// replay it; only the application can refuse (nginx passes $ssl_early_data, answers 425).
#include "probe/modules/early_data.hpp"

#include "probe/measurement.hpp"

namespace ngxtls::probe {

namespace {

constexpr int too_early = 425;  // RFC 8470: 425 Too Early

void fill(early_data_try& e, const connection& c) {
  e = early_try_of(c.early, c.http_status, c.error, c.handshake_ok, "no TLS handshake");
}

// A replayed flight the application answered.
bool answered(early_data_outcome o, const std::optional<int>& status) {
  return o == early_data_outcome::accepted && status && *status != too_early;
}

std::string status_text(const std::optional<int>& s) {
  return s ? "HTTP " + std::to_string(*s) : std::string("no HTTP status");
}

std::string try_text(const early_data_try& e) {
  if (e.error) return "failed (" + *e.error + ")";
  return to_string(e.outcome) + ", " + status_text(e.http_status);
}

}  // namespace

early_data_try early_try_of(early_data_outcome outcome, const std::optional<int>& http_status,
                            const std::optional<std::string>& error, bool handshake_ok,
                            const char* no_handshake) {
  early_data_try e;
  e.tried = true;
  e.outcome = outcome;
  e.http_status = http_status;
  e.error = error;
  if (!handshake_ok && !e.error) e.error = no_handshake;
  return e;
}

nlohmann::json early_try_json(const early_data_try& e) {
  return {{"outcome", to_string(e.outcome)},
          {"http_status", e.http_status ? nlohmann::json(*e.http_status) : nlohmann::json(nullptr)},
          {"error", e.error ? nlohmann::json(*e.error) : nlohmann::json(nullptr)}};
}

namespace {

class early_data final : public measurement {
 public:
  std::string_view name() const override { return "early_data"; }

  void on_connection(target_state&, module_state*, run_state* run,
                     const connection& c) const override {
    if (run == nullptr) return;
    auto& r = run->res;
    switch (c.role) {
      case connection_role::early_first:
        r.early_data_tried = true;
        fill(r.early_first, c);
        break;
      case connection_role::early_replay:
        fill(r.early_replay, c);
        r.early_replay_answered = r.early_replay_answered || answered(c.early, c.http_status);
        break;
      case connection_role::early_parallel:
        ++r.early_parallel_sent;
        if (c.early == early_data_outcome::accepted) ++r.early_parallel_accepted;
        if (c.http_status) ++r.early_parallel_statuses[*c.http_status];
        r.early_replay_answered = r.early_replay_answered || answered(c.early, c.http_status);
        break;
      default:
        break;
    }
  }

  void run_verdicts(const run_result& r, std::vector<std::string>& out) const override {
    if (!r.early_data_tried) return;
    const std::string label = run_label(r) + " 0-RTT: ";
    const auto& f = r.early_first;
    if (f.error) {
      out.push_back(label + "the connection sending early data failed: " + *f.error);
      return;
    }
    if (f.outcome != early_data_outcome::accepted) {
      out.push_back(label + "tickets allow early data, but the server rejected it (" +
                    status_text(f.http_status) + " after the handshake)");
      return;
    }
    std::string line = label + "early data accepted (" + status_text(f.http_status) +
                       "); the same ticket's early data again: " + try_text(r.early_replay) +
                       "; from " + std::to_string(r.early_parallel_sent) +
                       " connections at once: " + std::to_string(r.early_parallel_accepted) +
                       " accepted";
    if (r.early_replay_answered)
      line += ": a recorded first flight can be replayed and the application answers it";
    else if (f.http_status == too_early)
      line += ": the application answers early requests 425 Too Early";
    else
      line += ": replays are refused";
    out.push_back(line);
  }

  void run_text(const run_result& r, text_sink& s) const override {
    if (!r.early_data_tried) return;
    s.out << "    early data: first " << s.safe(try_text(r.early_first)) << "; replay "
          << s.safe(try_text(r.early_replay)) << "; " << r.early_parallel_accepted << "/"
          << r.early_parallel_sent << " accepted at once\n";
  }

  void run_json(const run_result& r, nlohmann::json& p) const override {
    if (!r.early_data_tried) {
      p["early_data"] = nullptr;
      return;
    }
    nlohmann::json statuses = nlohmann::json::object();
    for (const auto& [status, n] : r.early_parallel_statuses) statuses[std::to_string(status)] = n;
    p["early_data"] = {{"first", early_try_json(r.early_first)},
                       {"replay", early_try_json(r.early_replay)},
                       {"parallel",
                        {{"connections", r.early_parallel_sent},
                         {"accepted", r.early_parallel_accepted},
                         {"http_statuses", statuses}}},
                       {"replay_answered", r.early_replay_answered}};
  }

  void declare_metrics(metric_set& m) const override {
    m.declare("ngxtls_early_data_accepted",
              "1 when the server accepted early data (0-RTT) on the ticket's first use, else 0 "
              "(only with --early-data)");
    m.declare("ngxtls_early_data_replay_answered",
              "1 when a replayed first flight was accepted and answered by the application "
              "(not 425), else 0 (only with --early-data)");
  }

  void run_metrics(const run_result& r, const label_set& l, metric_set& m) const override {
    if (!r.early_data_tried) return;
    m.add("ngxtls_early_data_accepted", l,
          r.early_first.outcome == early_data_outcome::accepted ? 1 : 0);
    m.add("ngxtls_early_data_replay_answered", l, r.early_replay_answered ? 1 : 0);
  }
};

}  // namespace

/// The early-data module (registered in measurements.cpp).
const measurement& early_data_module() {
  static const early_data m;
  return m;
}

}  // namespace ngxtls::probe
