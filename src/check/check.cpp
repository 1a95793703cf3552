#include "check/check.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "engine/file_facts.hpp"
#include "probe/modules/headers.hpp"

namespace ngxtls::check {

std::string to_string(verdict v) {
  switch (v) {
    case verdict::confirmed:
      return "confirmed";
    case verdict::refuted:
      return "refuted";
    case verdict::not_testable:
      return "not_testable";
  }
  return "?";
}

std::vector<configured_key> configured_keys(const engine::context& ctx) {
  std::vector<configured_key> out;
  std::set<std::string> seen;
  const auto& m = ctx.model();
  for (const auto& k : m.sockets) {
    if (!k.ssl) continue;
    const auto& d = m.servers[k.default_server];
    const auto* keys = d.get("ssl_session_ticket_key");
    if (!keys) continue;
    for (std::size_t i = 0; i < keys->values.size(); ++i) {
      if (keys->values[i].args.empty()) continue;
      const std::string path = ctx.resolve(keys->values[i].args.front());
      if (!seen.insert(path + (i == 0 ? "#first" : "")).second) {
        for (auto& c : out)
          if (c.path == path && c.encrypting == (i == 0)) c.ports.push_back(k.port);
        continue;
      }
      configured_key c;
      c.path = path;
      c.encrypting = i == 0;
      c.server = d.names.empty() ? std::string() : d.names.front();
      c.ports.push_back(k.port);
      const auto& l = ctx.files().ticket_key(path);
      if (l.facts && l.facts->valid_size) c.key_name_hex = l.facts->key_name_hex;
      out.push_back(std::move(c));
    }
  }
  return out;
}

int port_of(const std::string& address);

std::vector<std::string> match_key_names(const std::vector<configured_key>& keys,
                                         const std::vector<probe::target_result>& results,
                                         const std::map<int, int>& port_map) {
  std::vector<std::string> out;
  std::map<std::string, std::set<int>> live;  // key name -> config ports it was seen on
  for (const auto& r : results) {
    int port = port_of(r.address);
    if (auto it = port_map.find(port); it != port_map.end()) port = it->second;
    for (const auto& run : r.protocols)
      for (const auto& [name, count] : run.ticket_key_names) live[name].insert(port);
  }
  for (const auto& [name, ports] : live) {
    const configured_key* match = nullptr;
    bool keyed_socket = false;
    for (const auto& k : keys) {
      if (!k.key_name_hex.empty() && k.key_name_hex == name) match = &k;
      for (int p : ports)
        if (std::find(k.ports.begin(), k.ports.end(), p) != k.ports.end()) keyed_socket = true;
    }
    std::string where;
    for (int p : ports) where += (where.empty() ? " on port " : ", ") + std::to_string(p);
    if (match)
      out.push_back(
          "live tickets" + where + " carry key name " + name + ": sealed with " + match->path +
          (match->encrypting
               ? " (the encrypting key)"
               : " (a decrypt-only key: the endpoint's key order differs from this config)"));
    else if (keyed_socket)
      out.push_back(
          "live tickets" + where + " carry key name " + name +
          ", which no ssl_session_ticket_key of this config holds: the deployed config is not "
          "the one you linted, or the endpoint's default server seals with its own key");
    else
      out.push_back(
          "live tickets" + where + " carry key name " + name +
          " (the socket's default server names no ticket key file: nginx's automatic key)");
  }
  return out;
}

namespace {

const probe::run_result* find_run(const probe::target_result& r, const std::string& protocol,
                                  const std::string& mechanism) {
  for (const auto& run : r.protocols)
    if (probe::to_string(run.protocol) == protocol &&
        probe::to_string(run.mechanism) == mechanism && !run.error && run.supported)
      return &run;
  return nullptr;
}

std::string label(const probe::target_result& r) {
  return r.sni.empty() || r.sni == r.target ? r.target : r.target + " (SNI " + r.sni + ")";
}

std::string frac(int a, int b) {
  return std::to_string(a) + "/" + std::to_string(b);
}

}  // namespace

// The port of "ip:port" / "[v6]:port"; 0 when there is none.
int port_of(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return 0;
  try {
    return std::stoi(address.substr(colon + 1));
  } catch (const std::exception&) {
    return 0;
  }
}

namespace {

// Whether SNI `sni` selects a server labelled `label` (its first server_name): equal, or a
// wildcard ("*.example.com", ".example.com", "www.example.*") that matches it, as nginx does.
bool name_matches(const std::string& label, const std::string& sni) {
  if (sni.empty()) return false;
  if (label == sni) return true;
  if (label.size() > 2 && label.compare(0, 2, "*.") == 0)
    return sni.size() > label.size() - 1 &&
           sni.compare(sni.size() - (label.size() - 1), label.size() - 1, label, 1) == 0;
  if (label.size() > 1 && label[0] == '.')
    return sni == label.substr(1) ||
           (sni.size() > label.size() &&
            sni.compare(sni.size() - label.size(), label.size(), label) == 0);
  if (label.size() > 2 && label.compare(label.size() - 2, 2, ".*") == 0)
    return sni.size() > label.size() - 1 &&
           sni.compare(0, label.size() - 1, label, 0, label.size() - 1) == 0;
  return false;
}

// Evidence must come from the finding's own listen sockets (matched by port): a probe of
// another socket says nothing about it.
std::vector<const probe::target_result*> relevant(const engine::finding& f,
                                                  engine::probe_question q,
                                                  const std::vector<probe::target_result>& results,
                                                  const std::map<int, int>& port_map) {
  std::vector<const probe::target_result*> byname, nosni, all;
  for (const auto& r : results) {
    if (r.error) continue;
    int port = port_of(r.address);
    if (auto it = port_map.find(port); it != port_map.end()) port = it->second;
    if (!f.ports.empty() && std::find(f.ports.begin(), f.ports.end(), port) == f.ports.end())
      continue;
    all.push_back(&r);
    if (!f.server.empty() && name_matches(f.server, r.sni)) byname.push_back(&r);
    if (r.sni.empty()) nosni.push_back(&r);
  }
  if (!byname.empty() || f.server.empty()) return byname.empty() ? all : byname;
  // Ticket keys and session caches belong to the socket (its default server,
  // docs/nginx-facts.md#default-server-rules): any handshake on it speaks for them. Other findings
  // need a probe of their own server; a connection without SNI reaches the default server.
  if (q == engine::probe_question::key_domains ||
      q == engine::probe_question::session_id_resumption)
    return all;
  return nosni;
}

void judge_tls13(checked_finding& c, const std::vector<const probe::target_result*>& rs,
                 const judge_options& o) {
  int attempts = 0, resumed = 0, tickets = 0;
  for (const auto* r : rs)
    if (const auto* run = find_run(*r, "TLSv1.3", "ticket")) {
      attempts += run->attempts;
      resumed += run->resumed;
      tickets += run->tickets;
      c.evidence.push_back({"TLSv1.3 resumed", frac(run->resumed, run->attempts), label(*r)});
      c.evidence.push_back({"TLSv1.3 tickets",
                            std::to_string(run->tickets) + ", " +
                                std::to_string(run->stateful_tickets) + " of them stateful",
                            label(*r)});
    }
  const bool note = c.finding.level == engine::severity::note;
  if (attempts == 0) {
    bool served = false;
    for (const auto* r : rs) served = served || find_run(*r, "TLSv1.3", "ticket");
    if (served && tickets == 0) {
      // TLS 1.3 handshakes completed and not one ticket came: nothing to resume with.
      c.result = note ? verdict::refuted : verdict::confirmed;
      c.reason = "TLS 1.3 is served but no session ticket arrived: no client can resume";
    } else {
      c.reason = served ? "no TLS 1.3 resumption attempt completed"
                        : "TLS 1.3 was not negotiated on the probed sockets (not enabled, or the "
                          "probe failed)";
    }
    return;
  }
  if (note && o.several_endpoints) {
    // A cache that lives in one instance: sessions resume only when they return to it.
    c.result = resumed < attempts ? verdict::confirmed : verdict::refuted;
    c.reason = resumed < attempts
                   ? "across the instances TLS 1.3 resumed " + frac(resumed, attempts) +
                         ": only on the instance that holds the session"
                   : "every instance resumed every session (" + frac(resumed, attempts) + ")";
    return;
  }
  if (note) {
    c.result = resumed > 0 ? verdict::confirmed : verdict::refuted;
    c.reason = resumed > 0
                   ? "TLS 1.3 resumes through the session cache (" + frac(resumed, attempts) + ")"
                   : "TLS 1.3 did not resume at all (" + frac(resumed, attempts) + ")";
    return;
  }
  if (resumed == 0 && tickets > 0) {
    c.result = verdict::confirmed;
    c.reason = "TLS 1.3 resumed " + frac(resumed, attempts) + " although " +
               std::to_string(tickets) + " tickets arrived";
  } else if (resumed > 0) {
    c.result = verdict::refuted;
    c.reason = "TLS 1.3 resumed " + frac(resumed, attempts);
  } else {
    c.reason = "no TLS 1.3 ticket arrived, so resumption could not be tried";
  }
}

// No TLS 1.2 session resumes, whichever way it is offered: the ticket run (a client that
// offers the ticket extension falls back to the session ID when no ticket comes) and the
// session-ID run.
void judge_tls12(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  int attempts = 0, resumed = 0;
  for (const auto* r : rs)
    for (const char* mechanism : {"ticket", "session_id"})
      if (const auto* run = find_run(*r, "TLSv1.2", mechanism)) {
        attempts += run->attempts;
        resumed += run->resumed;
        c.evidence.push_back({std::string("TLSv1.2 ") + mechanism + " resumed",
                              frac(run->resumed, run->attempts), label(*r)});
      }
  if (attempts == 0) {
    c.reason = "no TLS 1.2 resumption attempt completed (TLS 1.2 not negotiated, or not probed)";
  } else if (resumed == 0) {
    c.result = verdict::confirmed;
    c.reason =
        "no TLS 1.2 session resumed (" + frac(resumed, attempts) + ", by ticket and by session ID)";
  } else {
    c.result = verdict::refuted;
    c.reason = "TLS 1.2 resumed " + frac(resumed, attempts);
  }
}

void judge_keys(checked_finding& c, const std::vector<const probe::target_result*>& rs,
                const judge_options& o) {
  std::set<std::string> names;
  int attempts = 0, resumed = 0;
  for (const auto* r : rs)
    for (const auto& run : r->protocols) {
      if (run.mechanism != probe::resumption_mechanism::ticket || run.error || !run.supported)
        continue;
      for (const auto& [n, count] : run.ticket_key_names) names.insert(n);
      attempts += run.attempts;
      resumed += run.resumed;
      c.evidence.push_back({probe::to_string(run.protocol) + " ticket resumed",
                            frac(run.resumed, run.attempts), label(*r)});
    }
  c.evidence.push_back({"ticket key names seen", std::to_string(names.size()), ""});
  if (o.reload) {
    int saved = 0, saved_resumed = 0;
    for (const auto* r : rs)
      for (const auto& run : r->protocols)
        if (run.session_source == probe::session_origin::sess_in && !run.error) {
          saved += run.attempts;
          saved_resumed += run.resumed;
          c.evidence.push_back(
              {probe::to_string(run.protocol) + " session from before the reload resumed",
               frac(run.resumed, run.attempts), label(*r)});
        }
    if (saved > 0 && saved_resumed == 0) {
      c.result = verdict::confirmed;
      c.reason = "sessions taken before `nginx -s reload` resumed " + frac(saved_resumed, saved) +
                 " after it: the reload threw the ticket keys away";
      return;
    }
    if (saved > 0 && !o.several_endpoints) {
      c.reason = "sessions taken before the reload still resumed (" + frac(saved_resumed, saved) +
                 "); the multi-instance hazard needs --instances 2";
      return;
    }
  }
  if (attempts == 0) {
    c.reason = "no ticket resumption attempt completed";
    return;
  }
  if (names.size() > 1 || (resumed > 0 && resumed < attempts)) {
    c.result = verdict::confirmed;
    c.reason = std::to_string(names.size()) +
               " ticket key names live behind this name, ticket resumption " +
               frac(resumed, attempts);
  } else if (o.several_endpoints && names.size() <= 1 && resumed == attempts) {
    c.result = verdict::refuted;
    c.reason = "every endpoint resumed " + frac(resumed, attempts) + " with one ticket key";
  } else {
    c.reason = "one key domain at " + frac(resumed, attempts) +
               " on a single endpoint: the reload and multi-instance hazard is not visible there "
               "(probe every backend, or use --sandbox --instances 2 / --reload)";
  }
}

void judge_rotation(checked_finding& c, const std::vector<const probe::target_result*>& rs,
                    const judge_options& o) {
  if (!o.session_from_file) {
    c.reason =
        "only a session saved before the change can show it (offer one with --sess-in, or use "
        "--sandbox --baseline)";
    return;
  }
  int attempts = 0, resumed = 0;
  for (const auto* r : rs)
    for (const auto& run : r->protocols)
      if (run.session_source == probe::session_origin::sess_in && !run.error) {
        attempts += run.attempts;
        resumed += run.resumed;
        c.evidence.push_back({probe::to_string(run.protocol) + " saved session resumed",
                              frac(run.resumed, run.attempts), label(*r)});
      }
  if (attempts == 0) {
    c.reason = "the saved session was not offered";
  } else if (resumed == 0) {
    c.result = verdict::confirmed;
    c.reason =
        "the session saved before the deploy no longer resumes (" + frac(resumed, attempts) + ")";
  } else {
    c.result = verdict::refuted;
    c.reason =
        "the session saved before the deploy still resumes (" + frac(resumed, attempts) + ")";
  }
}

// docs/nginx-facts.md#session-id-cache: a builtin cache lives in one worker; only that worker
// resumes the session.
void judge_per_worker(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  int attempts = 0, resumed = 0;
  for (const auto* r : rs)
    if (const auto* run = find_run(*r, "TLSv1.2", "session_id")) {
      attempts += run->attempts;
      resumed += run->resumed;
      c.evidence.push_back(
          {"TLSv1.2 session ID resumed", frac(run->resumed, run->attempts), label(*r)});
    }
  if (attempts == 0) {
    c.reason = "no TLS 1.2 session-ID resumption attempt completed";
  } else if (resumed > 0 && resumed < attempts) {
    c.result = verdict::confirmed;
    c.reason = "session-ID resumption " + frac(resumed, attempts) +
               ": only connections that reach the worker holding the session resume";
  } else if (resumed == attempts) {
    c.reason = "every session-ID attempt resumed (" + frac(resumed, attempts) +
               "): under light load one worker may take every connection, which hides the split";
  } else {
    c.reason = "no session-ID attempt resumed (" + frac(resumed, attempts) +
               "): not the per-worker pattern";
  }
}

// The first-handshake runs, one per protocol asked for: was the protocol accepted?
std::map<std::string, bool> accepted(const std::vector<const probe::target_result*>& rs,
                                     std::vector<probe_fact>& evidence) {
  std::map<std::string, bool> out;
  for (const auto* r : rs)
    for (const auto& run : r->protocols) {
      if (run.mechanism != probe::resumption_mechanism::ticket || (run.error && run.supported))
        continue;  // failed for another reason
      if (out.count(probe::to_string(run.protocol))) continue;
      out[probe::to_string(run.protocol)] = run.supported;
      evidence.push_back({probe::to_string(run.protocol) + " handshake",
                          run.supported ? "accepted" : "refused", label(*r)});
    }
  return out;
}

void judge_tls13_missing(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  auto acc = accepted(rs, c.evidence);
  auto it = acc.find("TLSv1.3");
  if (it == acc.end()) {
    // Not asked for (check --tls1.2), or the handshake failed for another reason.
    std::string failure;
    for (const auto* r : rs)
      for (const auto& run : r->protocols)
        if (failure.empty() && run.protocol == probe::tls_protocol::tls1_3 && run.error)
          failure = *run.error;
    c.reason = failure.empty() ? "no TLS 1.3 handshake was probed"
                               : "the TLS 1.3 handshake failed: " + failure;
  } else if (!it->second) {
    c.result = verdict::confirmed;
    c.reason = "the server refused a TLS 1.3 handshake";
  } else {
    c.result = verdict::refuted;
    c.reason = "the server completed a TLS 1.3 handshake";
  }
}

// docs/nginx-facts.md#default-server-rules: the protocol is negotiated with the default server's
// ssl_protocols; a probe with this server's SNI shows which list nginx used.
void judge_protocols_per_sni(checked_finding& c,
                             const std::vector<const probe::target_result*>& rs) {
  std::string own;
  for (const auto& e : c.finding.facts)
    if (e.name == "ssl_protocols") own = e.value;
  auto acc = accepted(rs, c.evidence);
  if (own.empty() || acc.empty()) {
    c.reason = "no handshake with this server's name completed";
    return;
  }
  std::string differ;
  for (const auto& [proto, ok] : acc)
    if (ok != (own.find(proto) != std::string::npos))
      differ += (differ.empty() ? "" : ", ") + proto + (ok ? " accepted" : " refused");
  if (!differ.empty()) {
    c.result = verdict::confirmed;
    c.reason = differ + " under this name, against its own ssl_protocols (" + own + ")";
  } else {
    c.result = verdict::refuted;
    c.reason = "every protocol tried followed this server's own ssl_protocols (" + own + ")";
  }
}

void judge_stapling(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  if (c.finding.level == engine::severity::note) {
    c.reason = "a resolver hazard: it shows only when DNS fails at load time";
    return;
  }
  int asked = 0, stapled = 0, valid = 0;
  const probe::target_result* bad = nullptr;
  for (const auto* r : rs)
    if (r->ocsp.checked) {
      asked += r->ocsp.connections;
      stapled += r->ocsp.stapled;
      valid += r->ocsp.valid_staples;
      c.evidence.push_back({"OCSP staples", frac(r->ocsp.stapled, r->ocsp.connections), label(*r)});
      if (r->ocsp.stapled > 0)
        c.evidence.push_back(
            {"valid OCSP staples", frac(r->ocsp.valid_staples, r->ocsp.stapled), label(*r)});
      if (r->ocsp.status == probe::ocsp_status::invalid) {
        if (!bad) bad = r;
        c.evidence.push_back(
            {"OCSP staple",
             probe::staple_status_text(r->ocsp) + ": " + r->ocsp.staple_reason.value_or(""),
             label(*r)});
      }
    }
  if (asked == 0) {
    c.reason = "no staple was asked for (--no-ocsp)";
  } else if (stapled == 0) {
    c.result = verdict::confirmed;
    c.reason = "no staple on any of " + std::to_string(asked) + " connections";
  } else if (valid < stapled) {
    // Stapling is not dead, nor does it work: the staple itself is the problem, reported as
    // its own finding (probe_findings).
    c.reason = "a staple arrives on " + frac(stapled, asked) + " connections but " +
               std::to_string(stapled - valid) + " are not valid (" +
               (bad ? probe::staple_status_text(bad->ocsp) : std::string("?")) +
               "): see ocsp-staple-invalid";
  } else {
    c.result = verdict::refuted;
    c.reason = "a valid staple arrived on " + frac(stapled, asked) + " connections";
  }
}

// hsts-missing from the headers of the probe's `HEAD /` response (target_result::
// response_headers): the header absent confirms it, present refutes it (an upstream, or a
// module ngxtls does not model, sends it).
void judge_hsts(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  int read = 0, with = 0;
  for (const auto* r : rs) {
    if (r->response_headers.empty()) continue;
    ++read;
    const auto v = probe::header_value(r->response_headers, "Strict-Transport-Security");
    with += v.has_value();
    c.evidence.push_back({"Strict-Transport-Security", v.value_or("(absent)"), label(*r)});
  }
  if (read == 0) {
    c.reason = "no response headers were read (the probe sends no HTTP request with --no-http)";
  } else if (with == 0) {
    c.result = verdict::confirmed;
    c.reason = "the response to HEAD / has no Strict-Transport-Security header";
  } else {
    c.result = verdict::refuted;
    c.reason = "the response to HEAD / carries Strict-Transport-Security";
  }
}

// early-data-replay from the probe's 0-RTT offers (probe_options::early_data, check
// --sandbox): a replayed first flight accepted and answered by the application (any status but
// 425 Too Early) confirms it; replays refused, or answered 425, refute it.
void judge_early_data(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  int tried = 0, answered = 0, refused = 0, too_early = 0;
  for (const auto* r : rs) {
    const auto* run = find_run(*r, "TLSv1.3", "ticket");
    if (run == nullptr || !run->early_data_tried) continue;
    ++tried;
    const auto& rep = run->early_replay;
    const bool accepted =
        rep.outcome == probe::early_data_outcome::accepted || run->early_parallel_accepted > 0;
    if (run->early_replay_answered)
      ++answered;
    else if (!accepted)
      ++refused;
    else
      ++too_early;
    c.evidence.push_back(
        {"replayed early data",
         probe::to_string(rep.outcome) + ", HTTP " +
             (rep.http_status ? std::to_string(*rep.http_status) : std::string("none")) + "; " +
             frac(run->early_parallel_accepted, run->early_parallel_sent) + " accepted at once",
         label(*r)});
  }
  if (tried == 0) {
    c.reason =
        "no early data was sent (the probe sends 0-RTT only in check --sandbox, and only "
        "where TLS 1.3 tickets allow early data)";
  } else if (answered > 0) {
    c.result = verdict::confirmed;
    c.reason = "a replayed 0-RTT request was accepted and answered by the application";
  } else {
    c.result = verdict::refuted;
    c.reason = refused > 0 && too_early == 0 ? "the server refused the replayed early data"
                                             : "replayed early data is answered 425 Too Early";
  }
}

// tls-return-444 from how the server ended the probe's connections (probe::close_part):
// connections closed without close_notify, and clients that read to EOF resuming less than the
// prober, confirm it; every connection ended with close_notify refutes it.
void judge_close_notify(checked_finding& c, const std::vector<const probe::target_result*>& rs) {
  int unclean = 0, clean = 0, strict_attempts = 0, strict_resumed = 0, attempts = 0, resumed = 0;
  for (const auto* r : rs)
    for (const auto& run : r->protocols) {
      unclean += run.closes_eof + run.closes_reset;
      clean += run.closes_close_notify;
      if (run.strict_measured) {
        strict_attempts += run.strict_attempts;
        strict_resumed += run.strict_resumed;
        attempts += run.attempts;
        resumed += run.resumed;
      }
    }
  c.evidence.push_back(
      {"closed without close_notify", frac(unclean, unclean + clean) + " connections", ""});
  if (strict_attempts > 0)
    c.evidence.push_back(
        {"strict client resumed",
         frac(strict_resumed, strict_attempts) + " (prober: " + frac(resumed, attempts) + ")", ""});
  if (unclean + clean == 0) {
    c.reason = "no response was read to its end (the probe sends no HTTP request with --no-http)";
  } else if (unclean > 0 && strict_attempts > 0 &&
             strict_resumed * attempts < resumed * strict_attempts) {
    c.result = verdict::confirmed;
    c.reason = "connections end without close_notify, and clients that read to EOF resume " +
               frac(strict_resumed, strict_attempts);
  } else if (unclean == 0) {
    c.result = verdict::refuted;
    c.reason = "every connection ended with close_notify";
  } else {
    c.reason = "connections end without close_notify, but the strict client resumed as often";
  }
}

// nginx's time value in seconds ("300", "60s", "5m", "1h", "1d", "1h30m"); nullopt when unreadable.
std::optional<long> seconds_of(const std::string& text) {
  long total = 0, n = 0;
  bool digits = false;
  for (char ch : text) {
    if (ch >= '0' && ch <= '9') {
      if (n > 100000000) return std::nullopt;
      n = n * 10 + (ch - '0');
      digits = true;
      continue;
    }
    if (!digits) return std::nullopt;
    long unit = ch == 's'   ? 1
                : ch == 'm' ? 60
                : ch == 'h' ? 3600
                : ch == 'd' ? 86400
                : ch == 'w' ? 604800
                            : 0;
    if (!unit) return std::nullopt;
    total += n * unit;
    n = 0;
    digits = false;
  }
  return total + n;
}

// The config port of a result.
int config_port(const probe::target_result& r, const std::map<int, int>& port_map) {
  int port = port_of(r.address);
  if (auto it = port_map.find(port); it != port_map.end()) port = it->second;
  return port;
}

// docs/nginx-facts.md#default-server-rules: on a socket the default server's cache, timeout and
// ticket keys apply to every name. Tickets under this server's name show whose settings sealed
// them.
void judge_setting(checked_finding& c, const std::vector<const probe::target_result*>& rs,
                   const std::vector<probe::target_result>& all, const judge_options& o) {
  const auto& f = c.finding;
  if (f.facts.size() < 2) {
    c.reason = "the finding names no setting";
    return;
  }
  const std::string name = f.facts[0].name, own = f.facts[0].value, dflt = f.facts[1].value;
  // Under this name, and under the socket's other names.
  std::set<std::string> here, there;
  std::set<long> hint_here, hint_there;
  int id_attempts = 0, id_resumed = 0;
  for (const auto* r : rs)
    for (const auto& run : r->protocols) {
      if (run.error || !run.supported) continue;
      if (run.mechanism == probe::resumption_mechanism::ticket) {
        for (const auto& [k, n] : run.ticket_key_names) here.insert(k);
        if (run.lifetime_hint_s) hint_here.insert(*run.lifetime_hint_s);
        c.evidence.push_back(
            {probe::to_string(run.protocol) + " ticket key names",
             std::to_string(run.ticket_key_names.size()) +
                 (run.ticket_key_names.empty() ? "" : ": " + run.ticket_key_names.begin()->first),
             label(*r)});
        if (run.lifetime_hint_s)
          c.evidence.push_back({probe::to_string(run.protocol) + " ticket lifetime",
                                std::to_string(*run.lifetime_hint_s) + " s", label(*r)});
      } else if (run.mechanism == probe::resumption_mechanism::session_id) {
        id_attempts += run.attempts;
        id_resumed += run.resumed;
        c.evidence.push_back(
            {"TLSv1.2 session ID resumed", frac(run.resumed, run.attempts), label(*r)});
      }
    }
  for (const auto& r : all) {
    if (r.error || name_matches(f.server, r.sni)) continue;
    const int port = config_port(r, o.port_map);
    if (!f.ports.empty() && std::find(f.ports.begin(), f.ports.end(), port) == f.ports.end())
      continue;
    for (const auto& run : r.protocols)
      if (!run.error && run.supported && run.mechanism == probe::resumption_mechanism::ticket) {
        for (const auto& [k, n] : run.ticket_key_names) there.insert(k);
        if (run.lifetime_hint_s) hint_there.insert(*run.lifetime_hint_s);
      }
    if (!there.empty())
      c.evidence.push_back({"ticket key names under another name", *there.begin(), label(r)});
  }
  if (name == "ssl_session_ticket_key") {
    if (here.empty() || there.empty()) {
      c.reason = "no ticket key name was seen under this name and another of the socket";
    } else if (here == there) {
      c.result = verdict::confirmed;
      c.reason =
          "tickets under this name carry the same key name as under the socket's other names: this "
          "server's key file does not seal them";
    } else {
      c.result = verdict::refuted;
      c.reason =
          "tickets under this name carry their own key name: this server's ssl_session_ticket_key "
          "applies";
    }
  } else if (name == "ssl_session_timeout") {
    const auto own_s = seconds_of(own), dflt_s = seconds_of(dflt);
    if (hint_here.size() != 1 || !own_s) {
      c.reason = "no single ticket lifetime was seen under this name";
    } else if (*hint_here.begin() == *own_s) {
      c.result = verdict::refuted;
      c.reason =
          "tickets under this name carry its own lifetime (" + std::to_string(*own_s) + " s)";
    } else {
      c.result = verdict::confirmed;
      c.reason = "tickets under this name carry a " + std::to_string(*hint_here.begin()) +
                 " s lifetime, not its own " + std::to_string(*own_s) + " s" +
                 (dflt_s && *dflt_s == *hint_here.begin() ? ": the default server's" : "");
    }
  } else if (name == "ssl_session_cache") {
    const bool own_cache = own.rfind("shared", 0) == 0 || own.find("builtin") != std::string::npos;
    const bool default_none = dflt == "none" || dflt == "off";
    if (!own_cache || !default_none || id_attempts == 0) {
      c.reason = "a cache is visible only through session IDs when the default server has none";
    } else if (id_resumed == 0) {
      c.result = verdict::confirmed;
      c.reason = "TLS 1.2 session IDs never resumed under this name (" +
                 frac(id_resumed, id_attempts) + "): its cache is not used";
    } else {
      c.result = verdict::refuted;
      c.reason = "TLS 1.2 session IDs resumed under this name (" + frac(id_resumed, id_attempts) +
                 "): a cache is used";
    }
  } else {
    c.reason = "no probe measures " + name;
  }
}

void judge_crossing(checked_finding& c, const judge_options& o) {
  const auto& f = c.finding;
  int resumed = 0, failed = 0, full = 0;
  std::set<std::string> resumed_in, failed_in;  // protocols
  for (const auto& x : o.crossings) {
    if (!name_matches(f.server, x.to_sni)) continue;
    if (!f.ports.empty() && std::find(f.ports.begin(), f.ports.end(), x.port) == f.ports.end())
      continue;
    c.evidence.push_back({x.protocol + " session from " +
                              (x.from_sni.empty() ? std::string("no SNI") : x.from_sni) +
                              " offered at " + x.to_sni,
                          describe(x), x.target});
    if (!x.taken) continue;
    if (x.resumed > 0) {
      ++resumed;
      resumed_in.insert(x.protocol);
    } else if (x.failed > 0 && x.attempts == 0) {
      ++failed;
      failed_in.insert(x.protocol);
    } else if (x.attempts > 0)
      ++full;
  }
  if (resumed + failed + full == 0) {
    c.reason = o.crossings.empty() ? "no session was offered across server names"
                                   : "no session taken under another name could be offered here";
  } else if (resumed + failed > 0) {
    c.result = verdict::confirmed;
    auto join = [](const std::set<std::string>& ps) {
      std::string out;
      for (const auto& p : ps) out += (out.empty() ? "" : " and ") + p;
      return out;
    };
    c.reason = "sessions taken under another name of the socket, offered here: " +
               (resumed ? join(resumed_in) + " resumed" : std::string()) +
               (resumed && failed ? "; " : "") +
               (failed ? join(failed_in) + " handshakes failed" : std::string());
  } else {
    c.result = verdict::refuted;
    c.reason =
        "a session from another name of the socket gets a full handshake here: sessions do not "
        "cross";
  }
}

// Whether nginx -t's [warn] lines can confirm a finding of question `q`.
bool answered_by_warning(engine::probe_question q) {
  return q == engine::probe_question::nginx_t_warns_at_line ||
         q == engine::probe_question::socket_options_warned ||
         q == engine::probe_question::handshake_under_name;
}

// nginx -t's own word, where it warns about what the finding says.
bool judge_warning(checked_finding& c, engine::probe_question q, const judge_options& o) {
  const auto& f = c.finding;
  for (const auto& w : o.warnings) {
    bool hit = false;
    if (q == engine::probe_question::socket_options_warned ||
        q == engine::probe_question::handshake_under_name)
      hit = w.message.find("protocol options redefined") != std::string::npos && w.port != 0 &&
            std::find(f.ports.begin(), f.ports.end(), w.port) != f.ports.end();
    else if (q == engine::probe_question::nginx_t_warns_at_line)
      hit = !w.where.file.empty() && w.where.file == f.location.file &&
            w.where.line == f.location.line && w.message.find("deprecated") != std::string::npos;
    if (!hit) continue;
    c.result = verdict::confirmed;
    c.reason = "nginx -t warns: " + w.message;
    c.evidence.push_back({"nginx -t", "[warn] " + w.message, ""});
    return true;
  }
  return false;
}

// A server written without `ssl` on a TLS socket: a TLS handshake under its name shows the
// socket's ssl applies to it too.
void judge_listen_protocols(checked_finding& c, const std::vector<const probe::target_result*>& rs,
                            const judge_options& o) {
  if (c.finding.server.empty()) {
    c.reason = "nginx -t did not warn, and the finding names no server to probe";
    return;
  }
  for (int p : c.finding.ports)
    if (o.ssl_added_ports.count(p)) {
      c.reason =
          "nginx -t did not warn, and the sandbox added ssl to this socket's listens (no started "
          "server wrote it)";
      return;
    }
  for (const auto* r : rs)
    for (const auto& run : r->protocols)
      if (!run.error && run.supported && run.connections > 0 &&
          name_matches(c.finding.server, r->sni)) {
        c.result = verdict::confirmed;
        c.reason = "a " + run.negotiated_protocol +
                   " handshake under this name completed: the socket's ssl applies to this server";
        c.evidence.push_back({"TLS handshake", run.negotiated_protocol, label(*r)});
        return;
      }
  c.reason = "no TLS handshake under this name completed";
}

}  // namespace

std::string describe(const session_crossing& c) {
  if (!c.taken) return "no session to offer";
  std::string out;
  if (c.attempts > 0)
    out = c.resumed > 0 ? "resumed " + frac(c.resumed, c.attempts)
                        : "full handshake " + frac(c.attempts, c.attempts);
  for (const auto& [status, n] : c.http_statuses)
    out += "; HTTP " + std::to_string(status) + (status == 421 ? " Misdirected Request " : " ") +
           frac(n, c.attempts);
  if (c.failed > 0)
    out += (out.empty() ? "" : "; ") + std::string("handshake failed ") +
           frac(c.failed, c.failed + c.attempts) +
           (c.failure.empty() ? "" : " (" + c.failure + ")");
  return out.empty() ? "nothing completed" : out;
}

engine::probe_question question_of(const engine::finding& f, const engine::rule_catalog* catalog) {
  if (f.question) return *f.question;
  const engine::rule* r = catalog ? engine::find_rule(*catalog, f.rule) : engine::find_rule(f.rule);
  return r ? r->confirmed_by : engine::probe_question::none;
}

bool answers(engine::probe_question q) {
  // A switch without default: a question added to the enum and not handled here fails the
  // build (-Wswitch), and judge() has a case for each question answered.
  switch (q) {
    case engine::probe_question::none:
      return false;
    case engine::probe_question::nginx_t_verdict:        // judge(): options.rejected
    case engine::probe_question::nginx_t_warns_at_line:  // judge(): options.warnings
    case engine::probe_question::socket_options_warned:  // judge(): options.warnings
    case engine::probe_question::staple_valid:           // probe_findings()
    case engine::probe_question::tls13_resumes:
    case engine::probe_question::tls12_resumes:
    case engine::probe_question::key_domains:
    case engine::probe_question::saved_session_resumes:
    case engine::probe_question::staple_present:
    case engine::probe_question::tls13_handshake:
    case engine::probe_question::protocols_per_name:
    case engine::probe_question::session_id_resumption:
    case engine::probe_question::session_crosses_names:
    case engine::probe_question::settings_per_name:
    case engine::probe_question::handshake_under_name:
    case engine::probe_question::hsts_header_served:
    case engine::probe_question::early_data_replayed:
    case engine::probe_question::closes_without_close_notify:
      return true;
  }
  return false;
}

std::vector<checked_finding> judge(const std::vector<engine::finding>& findings,
                                   const std::vector<probe::target_result>& results,
                                   const judge_options& options) {
  std::vector<checked_finding> out;
  for (const auto& f : findings) {
    checked_finding c;
    c.finding = f;
    const engine::probe_question q = question_of(f, options.catalog);
    auto rs = relevant(f, q, results, options.port_map);
    const std::pair<source_location, std::string>* rejected = nullptr;
    // Only an error predicts that nginx refuses the directive; notes at the same place do not.
    for (const auto& r : options.rejected)
      if (f.level == engine::severity::error && !f.location.file.empty() &&
          r.first.file == f.location.file && r.first.line == f.location.line &&
          r.first.column == f.location.column)
        rejected = &r;
    auto untested = f.server.empty() ? options.untested.end() : options.untested.find(f.server);
    if (rejected) {
      // nginx -t's verdict answers nginx_t_verdict, and any error it rejects.
      c.result = verdict::confirmed;
      c.reason = "the sandbox nginx rejects it: " + rejected->second;
      c.evidence.push_back({"nginx -t", rejected->second, ""});
    } else if (untested != options.untested.end()) {
      c.reason = "the sandbox did not start this server: " + untested->second;
    } else if (answered_by_warning(q) && judge_warning(c, q, options)) {
      // nginx -t's own word: no probe needed.
    } else if (q == engine::probe_question::session_crosses_names) {
      judge_crossing(c, options);  // the crossing probes, not the main ones
    } else if (rs.empty()) {
      c.reason = f.ports.empty() ? "no target could be probed"
                                 : "no probed endpoint serves this finding's listen socket";
    } else {
      switch (q) {
        case engine::probe_question::settings_per_name:
          judge_setting(c, rs, results, options);
          break;
        case engine::probe_question::handshake_under_name:
          judge_listen_protocols(c, rs, options);
          break;
        case engine::probe_question::tls13_resumes:
          judge_tls13(c, rs, options);
          break;
        case engine::probe_question::tls12_resumes:
          judge_tls12(c, rs);
          break;
        case engine::probe_question::key_domains:
          judge_keys(c, rs, options);
          break;
        case engine::probe_question::saved_session_resumes:
          judge_rotation(c, rs, options);
          break;
        case engine::probe_question::staple_present:
          judge_stapling(c, rs);
          break;
        case engine::probe_question::tls13_handshake:
          judge_tls13_missing(c, rs);
          break;
        case engine::probe_question::protocols_per_name:
          judge_protocols_per_sni(c, rs);
          break;
        case engine::probe_question::hsts_header_served:
          if (options.sandbox_responses)
            c.reason =
                "the sandbox answers with its own response, not the server's add_header, "
                "locations or upstreams: its headers say nothing about this server's";
          else
            judge_hsts(c, rs);
          break;
        case engine::probe_question::session_id_resumption:
          judge_per_worker(c, rs);
          break;
        case engine::probe_question::early_data_replayed:
          judge_early_data(c, rs);
          break;
        case engine::probe_question::closes_without_close_notify:
          if (options.sandbox_responses)
            c.reason =
                "the sandbox answers with its own response, not the server's return: run check "
                "--endpoint against the server";
          else
            judge_close_notify(c, rs);
          break;
        case engine::probe_question::nginx_t_warns_at_line:
        case engine::probe_question::socket_options_warned:
          c.reason = "nginx -t did not warn, and a probe cannot see this";
          break;
        case engine::probe_question::nginx_t_verdict:
          c.reason = "nginx -t did not reject it (only check --sandbox runs nginx -t)";
          break;
        case engine::probe_question::staple_valid:
          c.reason = "the probe reports invalid staples as findings of their own";
          break;
        case engine::probe_question::session_crosses_names:  // judged above
        case engine::probe_question::none:
          c.reason = "no probe measures this rule";
          break;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

// Whether the sandbox ran `s` with a stand-in: one of its certificates cannot be read here.
bool stand_in_certificate(const engine::context& ctx, const model::server& s) {
  const auto* certs = s.get("ssl_certificate");
  if (!certs) return false;
  for (const auto& occ : certs->values) {
    if (occ.args.empty()) continue;
    const auto& l = ctx.files().certificate(ctx.resolve(occ.args.front()));
    if (!l.facts || l.facts->empty()) return true;
  }
  return false;
}

}  // namespace

std::vector<checked_finding> probe_findings(const engine::context& ctx,
                                            const std::vector<probe::target_result>& results,
                                            const std::map<int, int>& port_map, bool sandboxed) {
  std::vector<checked_finding> out;
  // The rule that declares the staple's validity its question names these findings.
  const engine::rule* staple_rule = nullptr;
  for (const auto& r : engine::all_rules())
    if (!staple_rule && r.confirmed_by == engine::probe_question::staple_valid) staple_rule = &r;
  if (!staple_rule) return out;
  const std::string& rule = staple_rule->id;
  const auto& opts = ctx.options();
  if ((opts.select && !opts.select->count(rule)) || opts.ignore.count(rule)) return out;
  auto level = staple_rule->level;
  if (auto it = opts.severity_overrides.find(rule); it != opts.severity_overrides.end())
    level = it->second;
  const auto& m = ctx.model();
  for (const auto& r : results) {
    if (r.error || r.ocsp.status != probe::ocsp_status::invalid) continue;
    int port = port_of(r.address);
    if (auto it = port_map.find(port); it != port_map.end()) port = it->second;
    // The server that answered: by SNI among the servers on the port, else the default server.
    const model::server* server = nullptr;
    for (const auto& k : m.sockets) {
      if (!k.ssl || k.port != port) continue;
      for (std::size_t i : k.servers)
        for (const auto& n : m.servers[i].names)
          if (!server && name_matches(n, r.sni)) server = &m.servers[i];
      if (!server) server = &m.servers[k.default_server];
      break;
    }
    if (sandboxed && server && stand_in_certificate(ctx, *server)) continue;
    const config::directive* where = nullptr;
    if (server)
      for (const char* d : {"ssl_stapling_file", "ssl_stapling", "ssl_certificate"})
        if (const auto* st = server->get(d); st && st->where() && !where) where = st->where();
    const auto& o = r.ocsp;
    auto f = ctx.make(rule, level,
                      "the OCSP staple served for " + label(r) + " is not valid (" +
                          probe::staple_status_text(o) + "): " + o.staple_reason.value_or("") +
                          "; clients must reject it",
                      where);
    if (server) {
      f.server = server->names.empty() || server->names.front().empty() ? std::string()
                                                                        : server->names.front();
      for (const auto& l : server->listens) f.ports.push_back(l.port);
    }
    if (engine::suppressed_inline(m, f)) continue;
    if (server && server->get("ssl_stapling_file") && server->get("ssl_stapling_file")->where())
      f.facts.push_back({"ssl_stapling_file",
                         std::string(server->get("ssl_stapling_file")->first()), "server",
                         ctx.where(server->get("ssl_stapling_file")->where())});
    f.fix = o.staple_status == tls::staple_verdict::revoked
                ? "# the certificate is revoked: replace it"
                : "ssl_stapling on;\nssl_stapling_verify on;\n# drop an outdated "
                  "ssl_stapling_file, or refresh it before its nextUpdate";
    checked_finding c;
    c.finding = std::move(f);
    c.result = verdict::confirmed;
    c.reason = "the probe got " + frac(o.stapled - o.valid_staples, o.stapled) +
               " staples that are not valid: " + o.staple_reason.value_or("");
    c.evidence.push_back({"OCSP staple", probe::staple_status_text(o), label(r)});
    c.evidence.push_back({"valid OCSP staples", frac(o.valid_staples, o.stapled), label(r)});
    if (o.response_status) c.evidence.push_back({"responseStatus", *o.response_status, label(r)});
    if (o.cert_status) c.evidence.push_back({"certStatus", *o.cert_status, label(r)});
    if (o.revocation_reason)
      c.evidence.push_back({"revocation reason", *o.revocation_reason, label(r)});
    if (o.next_update_in_s)
      c.evidence.push_back({"nextUpdate in", std::to_string(*o.next_update_in_s) + " s", label(r)});
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ngxtls::check
