// The judges of the QUIC probe questions: quic_tokens_kept and quic_early_data. Their evidence
// is the QUIC probe of each QUIC socket check --sandbox serves (judge_options::quic), never the
// TCP probes: nginx seals QUIC tokens with quic_host_key, which TCP TLS does not use.

#include <string>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

namespace {

// "3/8 closed with INVALID_TOKEN, 0/5 answered with a Retry, 5/5 resumed" for the evidence.
std::string offers_text(const probe::quic_token_offers& t) {
  std::string out = frac(t.invalid_token, t.offered) + " closed with INVALID_TOKEN, " +
                    frac(t.retried, t.completed) + " answered with a Retry, " +
                    frac(t.resumed, t.completed) + " resumed";
  const int other = t.offered - t.completed - t.invalid_token;
  if (other > 0)
    out += ", " + std::to_string(other) + " failed otherwise" +
           (t.errors.empty() ? "" : " (" + t.errors.front() + ")");
  return out;
}

}  // namespace

// quic-host-key-missing. nginx (1.26.3, 1.30.6) sends NEW_TOKEN only with quic_retry on, and
// closes a connection whose token it cannot decrypt with INVALID_TOKEN ("cannot decrypt token")
// before any handshake: the client must start over without it (docs/nginx-facts.md#quic).
// Without quic_retry there is no token to refuse. The offers are counted per probe: with
// --reload, the token and session taken before the reload (quic_result::carried); with
// --instances 2, one instance's token offered from new UDP ports, so that the other instance
// gets it too (quic_result::token_offers).
void quic_tokens_kept(checked_finding& c, const results& quic, const judge_options& o) {
  // Only the random key is the sandbox's to show: a key file the config names (its size, a
  // fleet member's other file) is the same file for every instance and reload here.
  bool key_named = false;
  for (const auto& e : c.finding.facts)
    key_named = key_named || (e.name == "quic_host_key" && e.origin != "default");
  if (key_named || c.finding.ports.empty()) {
    c.reason =
        "a probe cannot see this: the sandbox runs this configuration's own quic_host_key on "
        "every instance and across a reload (nginx -t's verdict confirms a file it refuses)";
    return;
  }
  int offered = 0, completed = 0, refused = 0, resumed = 0;
  bool token_came = false;
  std::string failure;
  for (const auto* r : quic) {
    const auto& q = *r->quic;
    if (q.error && failure.empty()) failure = *q.error;
    token_came = token_came || q.new_token_received;
    c.evidence.push_back({"QUIC Retry and NEW_TOKEN",
                          std::string(q.retry ? "Retry sent" : "no Retry") + ", " +
                              (q.new_token_received ? "NEW_TOKEN sent" : "no NEW_TOKEN"),
                          label(*r)});
    const auto& offers = o.reload ? q.carried : q.token_offers;
    if (!offers) continue;
    offered += offers->offered;
    completed += offers->completed;
    refused += offers->invalid_token + offers->retried;
    resumed += offers->resumed;
    c.evidence.push_back({o.reload ? "QUIC token and session from before the reload, offered "
                                     "after it"
                                   : "QUIC NEW_TOKEN token and session offered again",
                          offers_text(*offers), label(*r)});
  }
  const std::string where = o.reload ? "after the reload" : "across the instances";
  if (!failure.empty() && offered == 0) {
    c.reason = "the QUIC probe failed: " + failure;
  } else if (!token_came) {
    c.reason =
        "nginx sent no NEW_TOKEN (it sends one only with quic_retry on), so no client holds a "
        "token to be refused; the stateless reset tokens the host key also seals are not "
        "measured";
  } else if (!o.reload && !o.several_endpoints) {
    c.reason = "one instance, no reload: its own token is taken (" + frac(refused, offered) +
               " offers refused); the random key shows across a reload or instances (check "
               "--sandbox --reload, or --instances 2)";
  } else if (offered == 0) {
    c.reason = "no token was offered " + where;
  } else if (refused > 0) {
    c.result = verdict::confirmed;
    c.reason = "the NEW_TOKEN token was refused " + where + ": " + frac(refused, offered) +
               " connections offering it were closed with INVALID_TOKEN or sent a Retry (the "
               "client starts over without it); session ticket resumed " +
               frac(resumed, completed);
  } else if (completed == offered) {
    c.result = verdict::refuted;
    c.reason = "the NEW_TOKEN token was taken " + where + ": " + frac(completed, offered) +
               " connections offering it completed without a Retry (one host key)";
  } else {
    c.reason = "offers of the token " + where + " failed for another reason (" +
               frac(offered - completed, offered) + ")";
  }
}

// quic-early-data says either that the build accepts 0-RTT over QUIC (nginx 1.29.1+ with
// OpenSSL 3.5.1+) or that its OpenSSL compatibility layer has none: its message tells which.
void quic_early_data(checked_finding& c, const results& quic) {
  const bool predicts_accept = c.finding.message.find("accepts 0-RTT") != std::string::npos;
  int tried = 0, accepted = 0, replays_answered = 0, no_0rtt_tickets = 0, tickets = 0;
  std::string failure;
  for (const auto* r : quic) {
    const auto& q = *r->quic;
    if (q.error && failure.empty()) failure = *q.error;
    tickets += q.tickets;
    if (q.tickets > 0 && q.max_early_data.value_or(0) == 0) ++no_0rtt_tickets;
    if (!q.early_data_tried) continue;
    ++tried;
    // Behind several instances the replay may reach the one that issued the ticket when the
    // first try did not: either accepted shows that the build takes 0-RTT.
    const bool ok = q.early_first.outcome == probe::early_data_outcome::accepted ||
                    q.early_replay.outcome == probe::early_data_outcome::accepted;
    accepted += ok ? 1 : 0;
    replays_answered += q.early_replay_answered ? 1 : 0;
    c.evidence.push_back({"QUIC 0-RTT HEAD /",
                          "first " + probe::to_string(q.early_first.outcome) + ", replay " +
                              probe::to_string(q.early_replay.outcome) +
                              (q.early_replay.http_status
                                   ? " (HTTP " + std::to_string(*q.early_replay.http_status) + ")"
                                   : std::string()),
                          label(*r)});
  }
  if (tried == 0 && no_0rtt_tickets == 0) {
    c.reason = !failure.empty() ? "the QUIC probe failed: " + failure
               : tickets == 0   ? "no session ticket arrived over QUIC, so 0-RTT could not be tried"
                                : "0-RTT over QUIC was not tried (check --sandbox sends it)";
    return;
  }
  if (tried == 0) {
    c.evidence.push_back({"QUIC tickets allowing 0-RTT", "none (max_early_data 0)", ""});
    c.result = predicts_accept ? verdict::refuted : verdict::confirmed;
    c.reason = "no QUIC ticket allows 0-RTT (max_early_data 0 on " +
               std::to_string(no_0rtt_tickets) + " probed sockets)";
    return;
  }
  const bool accepts = accepted > 0;
  c.result = accepts == predicts_accept ? verdict::confirmed : verdict::refuted;
  c.reason = accepts ? "0-RTT over QUIC was accepted (" + frac(accepted, tried) +
                           "), and a replay answered " + frac(replays_answered, tried)
                     : "0-RTT over QUIC was rejected (" + frac(tried - accepted, tried) +
                           "): the server finished a 1-RTT handshake instead";
}

}  // namespace ngxtls::check::judges
