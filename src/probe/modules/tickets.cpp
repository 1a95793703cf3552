// Tickets and key names: every session ticket received on every connection of a run, its size
// (stateful or stateless) and, for stateless tickets, the key name in its first 16 bytes.
#include "probe/modules/tickets.hpp"

#include <algorithm>
#include <cstdio>

#include "probe/measurement.hpp"

namespace ngxtls::probe {
namespace {

// Attempts needed before a resumption rate may overrule the key names.
constexpr int min_attempts_for_contradiction = 4;

// Per run: how often each stateless ticket's first 16 bytes were seen.
struct tickets_state final : module_state {
  std::vector<std::map<std::string, int>> prefix_counts;  // by run index
};

// True while some ticket prefix was seen once only and more tickets could tell whether it is
// a key name: other prefixes repeat (a real key name layout), or fewer than 4 tickets so far.
bool need_samples(const std::map<std::string, int>& prefix_counts) {
  int singles = 0, repeats = 0, total = 0;
  for (const auto& [prefix, n] : prefix_counts) {
    (n == 1 ? singles : repeats) += 1;
    total += n;
  }
  return singles > 0 && (repeats > 0 || total < 4);
}

class tickets final : public measurement {
 public:
  std::string_view name() const override { return "tickets"; }

  std::unique_ptr<module_state> start_target(target_state& t) const override {
    auto s = std::make_unique<tickets_state>();
    s->prefix_counts.resize(t.runs.size());
    return s;
  }

  void on_connection(target_state& t, module_state* state, run_state* run,
                     const connection& c) const override {
    // The run's own connections only: follow-ups (chain, strict client, early data) have
    // modules of their own, and tickets_per_connection divides by the run's connections.
    if (run == nullptr || !c.handshake_ok || is_follow_up(c.role)) return;
    auto& counts = static_cast<tickets_state*>(state)->prefix_counts[index_of(t, *run)];
    auto& res = run->res;
    int with_ticket = 0;
    for (const auto& s : c.sessions) {
      const unsigned char* tick = nullptr;
      std::size_t len = 0;
      SSL_SESSION_get0_ticket(s.get(), &tick, &len);
      if (tick == nullptr || len == 0) continue;
      ++with_ticket;
      ++res.tickets;
      res.ticket_min_bytes = res.ticket_min_bytes == 0 ? len : std::min(res.ticket_min_bytes, len);
      res.ticket_max_bytes = std::max(res.ticket_max_bytes, len);
      if (len <= stateful_ticket_max_bytes) {
        ++res.stateful_tickets;
      } else {
        ++res.stateless_tickets;
        ++counts[ticket_prefix_hex(s.get())];
      }
      res.lifetime_hint_s =
          static_cast<std::uint32_t>(SSL_SESSION_get_ticket_lifetime_hint(s.get()));
      res.max_early_data = std::max(res.max_early_data, SSL_SESSION_get_max_early_data(s.get()));
    }
    res.max_tickets_per_connection = std::max(res.max_tickets_per_connection, with_ticket);
  }

  // TLS 1.2 resumed with a ticket gets no new one: one more full handshake beside the first
  // gives a second ticket, so a key name can repeat (and be called one).
  int full_handshakes_at_start(const run_state& run) const override {
    return run.mechanism == resumption_mechanism::ticket && run.protocol == tls_protocol::tls1_2
               ? 1
               : 0;
  }

  // A key name counts only when it repeats: a key seen once gets a few more full handshakes.
  bool wants_full_handshakes(const target_state& t, const module_state* state,
                             const run_state& run) const override {
    return run.mechanism == resumption_mechanism::ticket && run.res.session_offered &&
           need_samples(static_cast<const tickets_state*>(state)->prefix_counts[index_of(t, run)]);
  }

  void finish_run(target_state& t, module_state* state, run_state& run) const override {
    auto& res = run.res;
    if (state != nullptr)
      for (const auto& [prefix, n] :
           static_cast<tickets_state*>(state)->prefix_counts[index_of(t, run)]) {
        if (n >= 2)
          res.ticket_key_names[prefix] = n;
        else
          res.opaque_tickets += n;
      }
    // N key names predict about 1/N resumption: a rate far above it (past halfway to 100%)
    // contradicts N key domains, so no key-domain claim is made. Two names at such a rate are
    // real ones in a key rotation in progress (hosts at [CURRENT, NEW] and [NEW, CURRENT] accept
    // each other's tickets, test_harden_nginx). Three or more are either no key names at all
    // (stunnel with ticketKeySecret leaves those bytes unset) or servers that each encrypt with
    // their own key and decrypt every other (three nginx masters with rotated key lists,
    // test_probe_keys); the tickets alone cannot tell which, so the reason names both. The
    // resumption module's finish_run, which computes the rate, runs first (registry order).
    const std::size_t names = res.ticket_key_names.size();
    const double expected = names > 0 ? 1.0 / static_cast<double>(names) : 1.0;
    if (names >= 3 && res.attempts >= min_attempts_for_contradiction &&
        res.rate > (1.0 + expected) / 2.0) {
      for (const auto& [name, n] : res.ticket_key_names) res.opaque_tickets += n;
      res.opaque_reason = std::to_string(names) + " different ticket prefixes repeat, but " +
                          std::to_string(res.resumed) + " of " + std::to_string(res.attempts) +
                          " attempts resumed (" + std::to_string(names) +
                          " ticket keys would give about 1/" + std::to_string(names) +
                          "): either the first 16 bytes are not key names, or every server "
                          "accepts every key";
      res.ticket_key_names.clear();
    }
    res.tickets_per_connection =
        res.connections > 0 ? static_cast<double>(res.tickets) / res.connections : 0.0;
  }

  void run_verdicts(const run_result& r, std::vector<std::string>& out) const override {
    // Only for runs whose resumption was measured (the resumption module said why otherwise).
    if (!r.supported || (r.error && r.connections == 0) || !r.session_offered || r.attempts == 0)
      return;
    const std::string label = run_label(r);
    const std::size_t names = r.ticket_key_names.size();
    const bool both_accepted =
        names == 2 && r.attempts >= min_attempts_for_contradiction && r.rate > 0.75;
    if (both_accepted)
      out.push_back(label + ": connections reach 2 different ticket keys, and " +
                    std::to_string(r.resumed) + " of " + std::to_string(r.attempts) +
                    " attempts resumed: every server accepts both keys (a key rotation in "
                    "progress: the encrypting key differs between servers)");
    else if (names >= 2 && !r.single_use_pattern)
      out.push_back(label + ": connections reach " + std::to_string(names) +
                    " different ticket keys; expect about 1/" + std::to_string(names) +
                    " resumption");
    if (r.opaque_reason)
      out.push_back(label + ": tickets are opaque: " + *r.opaque_reason +
                    "; no claim about ticket keys");
    else if (names == 0 && r.stateless_tickets >= 2 && r.opaque_tickets == r.stateless_tickets)
      out.push_back(
          label +
          ": tickets are opaque (no key name repeats across tickets): no claim about ticket keys");
  }

  void run_text(const run_result& r, text_sink& s) const override {
    if (r.tickets == 0) return;
    char per[32];
    std::snprintf(per, sizeof per, "%.1f", r.tickets_per_connection);
    s.out << "    tickets: " << r.tickets << " (" << per << " per connection, "
          << r.stateless_tickets << " stateless, " << r.stateful_tickets << " stateful, "
          << r.ticket_min_bytes << "-" << r.ticket_max_bytes << " bytes)";
    if (r.lifetime_hint_s && *r.lifetime_hint_s == 0)
      s.out << (r.protocol == tls_protocol::tls1_2 ? ", lifetime hint unspecified (0)"
                                                   : ", lifetime 0 s (discard at once)");
    else if (r.lifetime_hint_s)
      s.out << ", lifetime hint " << *r.lifetime_hint_s << " s";
    if (r.max_early_data) s.out << ", max early data " << r.max_early_data << " bytes";
    s.out << "\n";
    for (const auto& [name, n] : r.ticket_key_names)
      s.out << "    ticket key " << s.safe(name) << ": " << n << " tickets\n";
    if (r.opaque_tickets) s.out << "    opaque tickets: " << r.opaque_tickets << "\n";
    if (r.opaque_reason) s.out << "    (" << s.safe(*r.opaque_reason) << ")\n";
  }

  void run_json(const run_result& r, nlohmann::json& p) const override {
    p["ticket_key_names"] = nlohmann::json::object();
    for (const auto& [name, n] : r.ticket_key_names) p["ticket_key_names"][name] = n;
    p["key_domains"] = r.ticket_key_names.size();
    p["opaque_tickets"] = r.opaque_tickets;
    p["tickets"] = r.tickets;
    p["stateful_tickets"] = r.stateful_tickets;
    p["stateless_tickets"] = r.stateless_tickets;
    p["ticket_size_bytes"] = {{"min", r.ticket_min_bytes}, {"max", r.ticket_max_bytes}};
    // TLS 1.2: 0 is "unspecified" (RFC 5077 3.3), not a lifetime.
    const bool unspecified =
        r.protocol == tls_protocol::tls1_2 && r.lifetime_hint_s && *r.lifetime_hint_s == 0;
    p["lifetime_hint_s"] = r.lifetime_hint_s && !unspecified ? nlohmann::json(*r.lifetime_hint_s)
                                                             : nlohmann::json(nullptr);
    p["lifetime_hint_unspecified"] = unspecified;
    p["opaque_reason"] =
        r.opaque_reason ? nlohmann::json(*r.opaque_reason) : nlohmann::json(nullptr);
    p["tickets_per_connection"] = r.tickets_per_connection;
    p["max_tickets_per_connection"] = r.max_tickets_per_connection;
    p["max_early_data"] = r.max_early_data;
  }

  void declare_metrics(metric_set& m) const override {
    m.declare("ngxtls_ticket_key_names",
              "Distinct session ticket key names seen (one per key domain: more than 1 behind "
              "one name means servers that do not share ssl_session_ticket_key)");
    m.declare("ngxtls_tickets_per_connection", "Session tickets received per connection");
  }

  void run_metrics(const run_result& r, const label_set& l, metric_set& m) const override {
    m.add("ngxtls_ticket_key_names", l, static_cast<double>(r.ticket_key_names.size()));
    m.add("ngxtls_tickets_per_connection", l, r.tickets_per_connection);
  }

 private:
  static std::size_t index_of(const target_state& t, const run_state& run) {
    return static_cast<std::size_t>(&run - t.runs.data());
  }
};

}  // namespace

/// The tickets module (registered in measurements.cpp).
const measurement& tickets_module() {
  static const tickets m;
  return m;
}

}  // namespace ngxtls::probe
