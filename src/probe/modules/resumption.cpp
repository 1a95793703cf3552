// Resumption per protocol and mechanism: each attempt offers a session on a fresh TCP
// connection; did the server resume it (SSL_session_reused)?
#include "probe/modules/resumption.hpp"

#include <cstdio>

#include "probe/measurement.hpp"

namespace ngxtls::probe {
namespace {

std::string percent(double rate) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", rate * 100.0);
  return buf;
}

// "resumed, full, resumed, full".
std::string pattern(const std::vector<bool>& outcomes) {
  std::string out;
  for (bool resumed : outcomes)
    out += (out.empty() ? "" : ", ") + std::string(resumed ? "resumed" : "full");
  return out;
}

std::string count_of(const run_result& r) {
  return std::to_string(r.resumed) + " of " + std::to_string(r.attempts) + " attempts resumed";
}

class resumption final : public measurement {
 public:
  std::string_view name() const override { return "resumption"; }

  void on_connection(target_state&, module_state*, run_state* run,
                     const connection& c) const override {
    if (run == nullptr) return;
    auto& res = run->res;
    if (c.role == connection_role::chain) {
      if (!c.handshake_ok || c.error) return;
      res.chain_outcomes.push_back(c.reused);
      if (c.reused) ++res.chain_resumed;
      return;
    }
    if (c.role != connection_role::attempt) return;
    if (!c.handshake_ok || c.error) {
      ++res.failed_connections;
      res.last_attempt_error = c.error;
      return;
    }
    ++res.attempts;
    if (c.http_status) ++res.http_statuses[*c.http_status];
    if (res.outcomes.size() <= static_cast<std::size_t>(c.attempt_index))
      res.outcomes.resize(static_cast<std::size_t>(c.attempt_index) + 1, false);
    res.outcomes[static_cast<std::size_t>(c.attempt_index)] = c.reused;
    if (c.reused) ++res.resumed;
  }

  void finish_run(target_state&, module_state*, run_state& run) const override {
    auto& res = run.res;
    res.rate = res.attempts > 0 ? static_cast<double>(res.resumed) / res.attempts : 0.0;
    res.single_use_pattern =
        res.mode == offer_mode::same_session && res.attempts >= 3 && res.resumed == 1;
    if (!res.error && res.session_offered && res.attempts == 0 && res.failed_connections > 0)
      res.error = "every resumption attempt failed: " + res.last_attempt_error.value_or("");
  }

  void run_verdicts(const run_result& r, std::vector<std::string>& out) const override {
    const std::string label = run_label(r);
    const bool tls13 = r.protocol == tls_protocol::tls1_3;
    const bool by_id = r.mechanism == resumption_mechanism::session_id;
    if (!r.supported) {
      out.push_back(label + ": not offered by the server (" + r.error.value_or("refused") + ")");
      return;
    }
    if (r.error && r.connections == 0) {
      out.push_back(label + ": could not be measured: " + *r.error);
      return;
    }
    if (!r.session_offered) {
      if (!by_id && !tls13)
        out.push_back(label + ": the server issues no TLS 1.2 session tickets");
      else if (tls13)
        out.push_back(label +
                      ": no session ticket arrived after the handshake: no resumption possible");
      else
        out.push_back(label + ": the server sent no session ID: nothing to resume with");
      return;
    }
    const bool saved = r.session_source == session_origin::sess_in;
    std::string source = saved ? " (session from --sess-in)" : "";
    if (r.attempts == 0) {
      out.push_back(label + ": no resumption attempt completed" +
                    (r.last_attempt_error ? ": " + *r.last_attempt_error : std::string()));
      return;
    }
    if (r.resumed == r.attempts) {
      std::string how;
      if (by_id)
        how = "session IDs, server-side cache";
      else if (r.stateless_tickets > 0 && r.ticket_key_names.size() == 1)
        how = "stateless tickets, one ticket key";
      else if (r.stateless_tickets > 0)
        how = "stateless tickets";
      else if (r.stateful_tickets > 0)
        how = "stateful tickets, server-side cache";
      out.push_back(label + " resumption works: " + count_of(r) + source +
                    (how.empty() ? "" : " (" + how + ")"));
    } else if (r.resumed == 0) {
      std::string why;
      if (by_id) {
        const int unclean = r.closes_eof + r.closes_reset;
        const int closed = unclean + r.closes_close_notify;
        if (unclean > 0)
          why = "the server sends session IDs but never resumes them; it closed " +
                std::to_string(unclean) + " of " + std::to_string(closed) +
                " connections without close_notify, and an OpenSSL-based server drops the "
                "session of a connection it ends that way";
        else
          why = "the server sends session IDs but never resumes them";
      } else if (r.stateful_tickets > 0 && r.stateless_tickets == 0) {
        char per[32];
        std::snprintf(per, sizeof per, "%.0f", r.tickets_per_connection);
        why = "tickets arrive (" + std::string(per) + " per connection) but they are stateful (" +
              std::to_string(r.ticket_max_bytes) +
              " bytes, a session ID) and the server keeps no session cache to find them";
      } else if (saved) {
        why = "the saved ticket is no longer accepted (its key is gone, or the session expired)";
      } else {
        why = "tickets arrive but are not accepted";
      }
      out.push_back(label + " resumption fails: " + count_of(r) + source + ": " + why);
    } else {
      out.push_back(label + " resumption is partial: " + count_of(r) + " (" + percent(r.rate) +
                    ")" + source);
    }
    if (!r.chain_outcomes.empty() && r.chain_resumed < static_cast<int>(r.chain_outcomes.size()))
      out.push_back(label + ": a ticket issued on a resumed connection does not always resume: " +
                    "offering the newest ticket each time gives " + pattern(r.chain_outcomes) +
                    " (" + std::to_string(r.chain_outcomes.size() - r.chain_resumed) + " of " +
                    std::to_string(r.chain_outcomes.size()) +
                    " reconnects of a client that keeps its newest ticket are full handshakes)");
    if (r.single_use_pattern)
      out.push_back(
          label +
          ": only one attempt resumed with the same session: the server looks to make tickets "
          "single-use (RFC 8446 section 8.1); rerun with --fresh-tickets. This is not a sign of "
          "several ticket keys");
  }

  void run_text(const run_result& r, text_sink& s) const override {
    s.out << "  " << run_label(r) << " [" << to_string(r.mode) << "]: " << r.resumed << "/"
          << r.attempts << " resumed";
    if (r.failed_connections) s.out << ", " << r.failed_connections << " failed";
    if (!r.chain_outcomes.empty())
      s.out << "; newest-ticket chain " << r.chain_resumed << "/" << r.chain_outcomes.size()
            << " resumed";
    s.out << "; " << s.safe(r.negotiated_protocol) << " " << s.safe(r.cipher);
    if (!r.group.empty()) s.out << " " << s.safe(r.group);
    if (!r.alpn.empty()) s.out << " ALPN " << s.safe(r.alpn);
    s.out << "\n";
  }

  void run_json(const run_result& r, nlohmann::json& p) const override {
    p["attempts"] = r.attempts;
    p["resumed"] = r.resumed;
    p["rate"] = r.rate;
    p["failed_connections"] = r.failed_connections;
    p["outcomes"] = r.outcomes;
    nlohmann::json statuses = nlohmann::json::object();
    for (const auto& [status, n] : r.http_statuses) statuses[std::to_string(status)] = n;
    p["http_statuses"] = statuses;
    p["single_use_pattern"] = r.single_use_pattern;
    p["chain"] = {{"offers", r.chain_outcomes.size()},
                  {"resumed", r.chain_resumed},
                  {"outcomes", r.chain_outcomes}};
  }

  void declare_metrics(metric_set& m) const override {
    m.declare("ngxtls_probe_resumption_rate", "Resumed attempts / attempts (0..1)");
    m.declare("ngxtls_probe_resumption_attempts", "Resumption attempts that completed a handshake");
    m.declare("ngxtls_probe_resumption_resumed", "Attempts with SSL_session_reused() == 1");
    m.declare("ngxtls_probe_chain_resumption_rate",
              "Chain of newest tickets (the first received on a resumed connection): resumed / "
              "offers (0..1)");
  }

  void run_metrics(const run_result& r, const std::string& l, metric_set& m) const override {
    if (!r.session_offered) return;
    m.add("ngxtls_probe_resumption_rate", l, r.rate);
    m.add("ngxtls_probe_resumption_attempts", l, r.attempts);
    m.add("ngxtls_probe_resumption_resumed", l, r.resumed);
    if (!r.chain_outcomes.empty())
      m.add("ngxtls_probe_chain_resumption_rate", l,
            static_cast<double>(r.chain_resumed) / static_cast<double>(r.chain_outcomes.size()));
  }
};

}  // namespace

/// The resumption module (registered in measurements.cpp).
const measurement& resumption_module() {
  static const resumption m;
  return m;
}

}  // namespace ngxtls::probe
