// The QUIC module: renders the QUIC probe's figures (probe/quic_probe.hpp) as text, verdicts,
// JSON and Prometheus metrics. It folds no TCP connection: the QUIC probe fills its part.
#include <cstdio>

#include "probe/measurement.hpp"

namespace ngxtls::probe {
namespace {

nlohmann::json optional_json(const std::optional<bool>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json timing_json(const timing_ms& t) {
  if (t.count == 0) return {{"count", 0}, {"median", nullptr}, {"p90", nullptr}};
  return {{"count", t.count}, {"median", t.median}, {"p90", t.p90}};
}

nlohmann::json offers_json(const std::optional<quic_token_offers>& o) {
  if (!o) return nullptr;
  return {{"offered", o->offered}, {"completed", o->completed},
          {"retried", o->retried}, {"invalid_token", o->invalid_token},
          {"resumed", o->resumed}, {"errors", o->errors}};
}

std::string ms_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", v);
  return buf;
}

std::string token_text(const quic_result& q) {
  if (!q.new_token_received) return "no NEW_TOKEN";
  if (!q.retry_with_token) return "NEW_TOKEN received, not measured";
  if (!q.retry) return "NEW_TOKEN received (no Retry to skip)";
  return *q.retry_with_token ? "NEW_TOKEN received, but the next connection still got a Retry"
                             : "NEW_TOKEN lets the next connection skip the Retry";
}

class quic_measurement final : public measurement {
 public:
  std::string_view name() const override { return "quic"; }

  void target_verdicts(const target_result& t, std::vector<std::string>& out) const override {
    if (!t.quic) return;
    const auto& q = *t.quic;
    if (q.error) {
      out.push_back("QUIC: no handshake on " + q.address + ": " + *q.error);
      return;
    }
    if (q.attempts > 0 && q.resumed == 0)
      out.push_back("QUIC: no resumption (0 of " + std::to_string(q.attempts) +
                    " attempts resumed)");
    if (q.ticket_key_names.size() >= 2)
      out.push_back("QUIC: tickets under " + std::to_string(q.ticket_key_names.size()) +
                    " ticket keys: expect about 1/" + std::to_string(q.ticket_key_names.size()) +
                    " resumption across them");
    if (q.retry && q.retry_with_token && *q.retry_with_token)
      out.push_back("QUIC: a NEW_TOKEN token did not spare the next connection its Retry");
    if (q.early_replay_answered)
      out.push_back("QUIC 0-RTT: a replayed request was accepted and answered (HTTP " +
                    std::to_string(q.early_replay.http_status.value_or(0)) + ")");
  }

  void target_text(const target_result& t, text_sink& s) const override {
    if (!t.quic) return;
    const auto& q = *t.quic;
    s.out << "  QUIC " << s.safe(q.address)
          << (q.trigger == quic_trigger::alt_svc ? " (advertised by Alt-Svc)" : "") << ": ";
    if (q.error) {
      s.out << "failed: " << s.safe(*q.error) << "\n";
      return;
    }
    s.out << s.safe(q.alpn) << ", " << s.safe(q.cipher) << ", " << s.safe(q.group) << "; "
          << q.resumed << "/" << q.attempts << " resumed";
    if (q.attempts > 0) s.out << " (" << static_cast<int>(q.rate * 100 + 0.5) << "%)";
    s.out << "\n    tickets " << q.tickets << ", key names " << q.ticket_key_names.size();
    for (const auto& k : q.ticket_key_names) s.out << " " << s.safe(k);
    if (q.ticket_lifetime_hint_s) s.out << ", lifetime " << *q.ticket_lifetime_hint_s << " s";
    s.out << "\n    Retry " << (q.retry ? "sent" : "not sent") << "; " << token_text(q)
          << "\n    full handshake " << ms_text(q.full_handshake_ms.median);
    if (q.resumed_handshake_ms.count > 0)
      s.out << ", resumed " << ms_text(q.resumed_handshake_ms.median);
    s.out << " (median)\n";
    if (q.early_data_tried) {
      s.out << "    0-RTT: first " << to_string(q.early_first.outcome) << ", replay "
            << to_string(q.early_replay.outcome);
      if (q.early_replay.http_status) s.out << " (HTTP " << *q.early_replay.http_status << ")";
      s.out << "\n";
    }
  }

  void target_json(const target_result& t, nlohmann::json& j) const override {
    if (!t.quic) {
      j["quic"] = nullptr;
      return;
    }
    const auto& q = *t.quic;
    nlohmann::json statuses = nlohmann::json::object();
    for (const auto& [status, n] : q.http_statuses) statuses[std::to_string(status)] = n;
    nlohmann::json early = nullptr;
    if (q.early_data_tried)
      early = {{"first", early_try_json(q.early_first)},
               {"replay", early_try_json(q.early_replay)},
               {"replay_answered", q.early_replay_answered},
               {"response_ms", q.early_response_ms ? nlohmann::json(*q.early_response_ms)
                                                   : nlohmann::json(nullptr)}};
    j["quic"] = {
        {"trigger", to_string(q.trigger)},
        {"address", q.address},
        {"alt_svc", q.alt_svc ? nlohmann::json(*q.alt_svc) : nlohmann::json(nullptr)},
        {"error", q.error ? nlohmann::json(*q.error) : nlohmann::json(nullptr)},
        {"version", q.version},
        {"alpn", q.alpn},
        {"cipher", q.cipher},
        {"group", q.group},
        {"full_handshakes", q.full_handshakes},
        {"attempts", q.attempts},
        {"resumed", q.resumed},
        {"rate", q.rate},
        {"failed_connections", q.failed_connections},
        {"errors", q.errors},
        {"tickets", q.tickets},
        {"stateful_tickets", q.stateful_tickets},
        {"ticket_key_names", q.ticket_key_names},
        {"lifetime_hint_s", q.ticket_lifetime_hint_s ? nlohmann::json(*q.ticket_lifetime_hint_s)
                                                     : nlohmann::json(nullptr)},
        {"max_early_data",
         q.max_early_data ? nlohmann::json(*q.max_early_data) : nlohmann::json(nullptr)},
        {"retry", q.retry},
        {"new_token", q.new_token_received},
        {"retry_with_token", optional_json(q.retry_with_token)},
        {"token_resumed", optional_json(q.token_resumed)},
        {"token_offers", offers_json(q.token_offers)},
        {"carried", offers_json(q.carried)},
        {"http_statuses", statuses},
        {"full_handshake_ms", timing_json(q.full_handshake_ms)},
        {"resumed_handshake_ms", timing_json(q.resumed_handshake_ms)},
        {"early_data", early},
        {"elapsed_ms", q.elapsed_ms}};
  }

  void declare_metrics(metric_set& m) const override {
    m.declare("ngxtls_quic_probe_success",
              "1 when a QUIC handshake completed, 0 when none did (the QUIC probe ran)");
    m.declare("ngxtls_quic_resumption_ratio",
              "QUIC resumption attempts that resumed, 0..1 (the QUIC probe)");
    m.declare("ngxtls_quic_resumption_attempts", "QUIC resumption attempts made");
    m.declare("ngxtls_quic_resumption_resumed", "QUIC resumption attempts that resumed");
    m.declare("ngxtls_quic_failed_connections", "QUIC connections that ended with an error");
    m.declare("ngxtls_quic_handshake_seconds",
              "QUIC handshake time, first Initial until complete, by kind (full, resumed) and "
              "stat (median, p90)");
    m.declare("ngxtls_quic_ticket_key_names", "Distinct ticket key names seen over QUIC");
    m.declare("ngxtls_quic_ticket_lifetime_seconds",
              "ticket_lifetime of the first NewSessionTicket received over QUIC");
    m.declare("ngxtls_quic_retry_sent",
              "1 when the server answered a connection without a token with a Retry");
    m.declare("ngxtls_quic_new_token_received", "1 when a connection got a NEW_TOKEN frame");
    m.declare("ngxtls_quic_new_token_validated",
              "1 when a NEW_TOKEN token spared the next connection its Retry, 0 when it did not");
    m.declare("ngxtls_quic_early_data_accepted",
              "With --early-data: 1 when the server accepted 0-RTT on the ticket's first use");
    m.declare("ngxtls_quic_early_data_replay_answered",
              "With --early-data: 1 when the replayed 0-RTT request was accepted and answered");
  }

  void target_metrics(const target_result& t, const label_set& labels,
                      metric_set& m) const override {
    if (!t.quic) return;
    const auto& q = *t.quic;
    m.add("ngxtls_quic_probe_success", labels, q.handshake_ok && !q.error ? 1 : 0);
    m.add("ngxtls_quic_failed_connections", labels, q.failed_connections);
    if (!q.handshake_ok) return;
    if (q.attempts > 0) {
      m.add("ngxtls_quic_resumption_ratio", labels, q.rate);
      m.add("ngxtls_quic_resumption_attempts", labels, q.attempts);
      m.add("ngxtls_quic_resumption_resumed", labels, q.resumed);
    }
    handshake_metrics(m, with_label(labels, "kind", "full"), q.full_handshake_ms);
    handshake_metrics(m, with_label(labels, "kind", "resumed"), q.resumed_handshake_ms);
    m.add("ngxtls_quic_ticket_key_names", labels, static_cast<double>(q.ticket_key_names.size()));
    if (q.ticket_lifetime_hint_s)
      m.add("ngxtls_quic_ticket_lifetime_seconds", labels, *q.ticket_lifetime_hint_s);
    m.add("ngxtls_quic_retry_sent", labels, q.retry ? 1 : 0);
    m.add("ngxtls_quic_new_token_received", labels, q.new_token_received ? 1 : 0);
    // Only where there was a Retry to skip and the token's connection completed.
    if (q.retry && q.retry_with_token)
      m.add("ngxtls_quic_new_token_validated", labels, *q.retry_with_token ? 0 : 1);
    if (q.early_data_tried) {
      m.add("ngxtls_quic_early_data_accepted", labels,
            q.early_first.outcome == early_data_outcome::accepted ? 1 : 0);
      m.add("ngxtls_quic_early_data_replay_answered", labels, q.early_replay_answered ? 1 : 0);
    }
  }

 private:
  static void handshake_metrics(metric_set& m, const label_set& l, const timing_ms& t) {
    if (t.count == 0) return;
    m.add("ngxtls_quic_handshake_seconds", with_label(l, "stat", "median"), t.median / 1000.0);
    m.add("ngxtls_quic_handshake_seconds", with_label(l, "stat", "p90"), t.p90 / 1000.0);
  }
};

}  // namespace

const measurement& quic_module() {
  static const quic_measurement m;
  return m;
}

}  // namespace ngxtls::probe
