// How servers end connections: after a complete `HEAD /` exchange each connection reads on
// until the server closes and records whether TLS close_notify came first. The strict-client
// run (roles strict_first, strict_attempt) resumes as a client that reads to EOF without
// SSL_OP_IGNORE_UNEXPECTED_EOF: OpenSSL then ends a bare close with a fatal "unexpected eof"
// alert, which marks the session it holds not resumable (ssl3_send_alert ->
// SSL_CTX_remove_session), so such a client reconnects with a full handshake.
#include "probe/modules/close.hpp"

#include <cstdio>

#include "probe/measurement.hpp"

namespace ngxtls::probe {
namespace {

std::string ratio_text(int n, int of) {
  return std::to_string(n) + " of " + std::to_string(of);
}

class closes final : public measurement {
 public:
  std::string_view name() const override { return "close"; }

  void on_connection(target_state& t, module_state*, run_state* run,
                     const connection& c) const override {
    if (c.role == connection_role::keepalive) {
      keepalive_close k;
      k.wait_ms = t.options->keepalive_wait_ms;
      k.closed_by = c.closed_by;
      if (c.closed_at && c.first_byte_at)
        k.closed_after_ms = ms_between(*c.first_byte_at, *c.closed_at);
      k.error = c.error;
      if (!c.handshake_ok && !k.error) k.error = "no TLS handshake";
      t.res.keepalive = k;
      return;
    }
    if (run == nullptr) return;
    auto& res = run->res;
    if (c.role == connection_role::strict_first) {
      res.strict_measured = true;
      if (c.session_after_close)
        res.strict_session_resumable = SSL_SESSION_is_resumable(c.session_after_close.get()) == 1;
      return;
    }
    if (c.role == connection_role::strict_attempt) {
      if (!c.handshake_ok || c.error) {
        ++res.strict_failed;
        return;
      }
      ++res.strict_attempts;
      if (c.reused) ++res.strict_resumed;
      return;
    }
    // After a complete response, or when the server closed without one (`return 444`).
    const bool ended =
        c.response_complete || (c.request_sent_at && c.closed_by != peer_close::not_seen);
    if (is_follow_up(c.role) || !ended || !t.options->http) return;
    switch (c.closed_by) {
      case peer_close::close_notify:
        ++res.closes_close_notify;
        break;
      case peer_close::eof:
        ++res.closes_eof;
        break;
      case peer_close::reset:
        ++res.closes_reset;
        break;
      default:
        ++res.closes_not_seen;
    }
  }

  void finish_run(target_state&, module_state*, run_state& run) const override {
    auto& r = run.res;
    r.strict_rate = r.strict_attempts > 0 ? static_cast<double>(r.strict_resumed) /
                                                static_cast<double>(r.strict_attempts)
                                          : 0.0;
  }

  void run_verdicts(const run_result& r, std::vector<std::string>& out) const override {
    const int unclean = r.closes_eof + r.closes_reset;
    const int closed = unclean + r.closes_close_notify;
    if (!r.strict_measured || r.strict_attempts == 0) {
      if (unclean > 0)
        out.push_back(run_label(r) + ": the server closes " + ratio_text(unclean, closed) +
                      " connections without close_notify");
      return;
    }
    if (r.strict_resumed < r.strict_attempts && r.strict_rate < r.rate) {
      std::string why = unclean > 0 ? "the server closes without close_notify (" +
                                          ratio_text(unclean, closed) + " connections)"
                                    : "although the server sent close_notify";
      out.push_back(run_label(r) + ": clients that read to EOF resume " +
                    ratio_text(r.strict_resumed, r.strict_attempts) + ": " + why);
    } else if (unclean > 0) {
      out.push_back(run_label(r) + ": the server closes " + ratio_text(unclean, closed) +
                    " connections without close_notify; clients that read to EOF still resume " +
                    ratio_text(r.strict_resumed, r.strict_attempts));
    }
  }

  void target_verdicts(const target_result& t, std::vector<std::string>& out) const override {
    if (!t.keepalive || t.keepalive->error) return;
    const auto& k = *t.keepalive;
    char after[32];
    std::snprintf(after, sizeof after, "%.1f", k.closed_after_ms.value_or(0) / 1000.0);
    if (k.closed_by == peer_close::eof || k.closed_by == peer_close::reset)
      out.push_back("keep-alive: the server closed an idle connection after " + std::string(after) +
                    " s without close_notify (" + to_string(k.closed_by) +
                    "): clients that read to EOF lose that connection's session");
    else if (k.closed_by == peer_close::close_notify)
      out.push_back("keep-alive: the server closed an idle connection after " + std::string(after) +
                    " s with close_notify");
  }

  void target_text(const target_result& t, text_sink& s) const override {
    if (!t.keepalive) return;
    const auto& k = *t.keepalive;
    s.out << "  keep-alive close (waited up to " << k.wait_ms << " ms): ";
    if (k.error)
      s.out << "failed: " << s.safe(*k.error);
    else if (k.closed_by == peer_close::not_seen)
      s.out << "still open";
    else
      s.out << to_string(k.closed_by) << " after "
            << static_cast<long>(k.closed_after_ms.value_or(0)) << " ms";
    s.out << "\n";
  }

  void target_json(const target_result& t, nlohmann::json& j) const override {
    if (!t.keepalive) {
      j["keepalive_close"] = nullptr;
      return;
    }
    const auto& k = *t.keepalive;
    j["keepalive_close"] = {
        {"wait_ms", k.wait_ms},
        {"closed_by", to_string(k.closed_by)},
        {"closed_after_ms",
         k.closed_after_ms ? nlohmann::json(*k.closed_after_ms) : nlohmann::json(nullptr)},
        {"error", k.error ? nlohmann::json(*k.error) : nlohmann::json(nullptr)}};
  }

  void run_text(const run_result& r, text_sink& s) const override {
    const int closed = r.closes_close_notify + r.closes_eof + r.closes_reset + r.closes_not_seen;
    if (closed == 0 && !r.strict_measured) return;
    s.out << "    server close after the response: " << r.closes_close_notify << " close_notify, "
          << r.closes_eof << " without close_notify, " << r.closes_reset << " reset, "
          << r.closes_not_seen << " left open";
    if (r.strict_measured)
      s.out << "; strict client (reads to EOF): " << r.strict_resumed << "/" << r.strict_attempts
            << " resumed";
    s.out << "\n";
  }

  void run_json(const run_result& r, nlohmann::json& p) const override {
    p["server_close"] = {{"close_notify", r.closes_close_notify},
                         {"eof", r.closes_eof},
                         {"reset", r.closes_reset},
                         {"not_seen", r.closes_not_seen}};
    if (!r.strict_measured) {
      p["strict_client"] = nullptr;
      return;
    }
    p["strict_client"] = {{"attempts", r.strict_attempts},
                          {"resumed", r.strict_resumed},
                          {"rate", r.strict_rate},
                          {"failed_connections", r.strict_failed},
                          {"session_resumable_after_eof",
                           r.strict_session_resumable ? nlohmann::json(*r.strict_session_resumable)
                                                      : nlohmann::json(nullptr)}};
  }

  void declare_metrics(metric_set& m) const override {
    m.declare("ngxtls_probe_server_closes",
              "Connections after a complete response, by how the server closed (label close)");
    m.declare("ngxtls_probe_strict_client_resumption_rate",
              "Resumed / attempts of a client that reads to EOF without ignoring an unexpected "
              "EOF (0..1)");
  }

  void run_metrics(const run_result& r, const std::string& l, metric_set& m) const override {
    const std::pair<const char*, int> kinds[] = {{"close_notify", r.closes_close_notify},
                                                 {"eof", r.closes_eof},
                                                 {"reset", r.closes_reset},
                                                 {"not_seen", r.closes_not_seen}};
    if (r.closes_close_notify + r.closes_eof + r.closes_reset + r.closes_not_seen > 0)
      for (const auto& [kind, n] : kinds)
        m.add("ngxtls_probe_server_closes", l + ",close=\"" + kind + "\"", n);
    if (r.strict_measured && r.strict_attempts > 0)
      m.add("ngxtls_probe_strict_client_resumption_rate", l, r.strict_rate);
  }
};

}  // namespace

/// The close module (registered in measurements.cpp).
const measurement& close_module() {
  static const closes m;
  return m;
}

}  // namespace ngxtls::probe
