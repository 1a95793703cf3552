#include "check/check.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "check/judges/judges.hpp"
#include "engine/file_facts.hpp"

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

std::vector<std::string> match_key_names(const std::vector<configured_key>& keys,
                                         const std::vector<probe::target_result>& results,
                                         const std::map<int, int>& port_map) {
  std::vector<std::string> out;
  std::map<std::string, std::set<int>> live;  // key name -> config ports it was seen on
  for (const auto& r : results) {
    int port = judges::port_of(r.address);
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

// Evidence must come from the finding's own listen sockets (matched by port): a probe of
// another socket says nothing about it.
std::vector<const probe::target_result*> relevant(const engine::finding& f,
                                                  engine::probe_question q,
                                                  const std::vector<probe::target_result>& results,
                                                  const std::map<int, int>& port_map) {
  std::vector<const probe::target_result*> byname, nosni, all;
  for (const auto& r : results) {
    if (r.error) continue;
    int port = judges::port_of(r.address);
    if (auto it = port_map.find(port); it != port_map.end()) port = it->second;
    if (!f.ports.empty() && std::find(f.ports.begin(), f.ports.end(), port) == f.ports.end())
      continue;
    all.push_back(&r);
    if (!f.server.empty() && judges::name_matches(f.server, r.sni)) byname.push_back(&r);
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

}  // namespace

std::string describe(const session_crossing& c) {
  if (!c.taken) return "no session to offer";
  std::string out;
  if (c.attempts > 0)
    out = c.resumed > 0 ? "resumed " + judges::frac(c.resumed, c.attempts)
                        : "full handshake " + judges::frac(c.attempts, c.attempts);
  for (const auto& [status, n] : c.http_statuses)
    out += "; HTTP " + std::to_string(status) + (status == 421 ? " Misdirected Request " : " ") +
           judges::frac(n, c.attempts);
  if (c.failed > 0)
    out += (out.empty() ? "" : "; ") + std::string("handshake failed ") +
           judges::frac(c.failed, c.failed + c.attempts) +
           (c.failure.empty() ? "" : " (" + c.failure + ")");
  return out.empty() ? "nothing completed" : out;
}

namespace {

// The upstream questions, judged by the stand-ins' counts; false for every other question.
bool judge_upstream(checked_finding& c, engine::probe_question q, const judge_options& o) {
  switch (q) {
    case engine::probe_question::upstream_connections:
      judges::upstream_connections(c, o);
      return true;
    case engine::probe_question::upstream_resumption:
      judges::upstream_resumption(c, o);
      return true;
    case engine::probe_question::upstream_sni:
      judges::upstream_sni(c, o);
      return true;
    case engine::probe_question::upstream_verification:
      judges::upstream_verification(c, o);
      return true;
    default:
      return false;
  }
}

// The QUIC probes of the finding's QUIC sockets (by config port): under its server name, else
// the ones without SNI, else all of them (the host key and 0-RTT settings of a QUIC socket are its
// default server's, docs/nginx-facts.md#quic).
std::vector<const probe::target_result*> relevant_quic(const engine::finding& f,
                                                       const judge_options& o) {
  std::vector<const probe::target_result*> byname, nosni, all;
  for (const auto& r : o.quic) {
    if (!r.quic) continue;
    int port = judges::port_of(r.quic->address);
    if (auto it = o.quic_port_map.find(port); it != o.quic_port_map.end()) port = it->second;
    if (!f.ports.empty() && std::find(f.ports.begin(), f.ports.end(), port) == f.ports.end())
      continue;
    all.push_back(&r);
    if (!f.server.empty() && judges::name_matches(f.server, r.sni)) byname.push_back(&r);
    if (r.sni.empty()) nosni.push_back(&r);
  }
  if (!byname.empty()) return byname;
  return nosni.empty() ? all : nosni;
}

// The QUIC questions, judged by the QUIC probes; false for every other question.
bool judge_quic(checked_finding& c, engine::probe_question q, const judge_options& o) {
  if (q != engine::probe_question::quic_tokens_kept && q != engine::probe_question::quic_early_data)
    return false;
  const auto rs = relevant_quic(c.finding, o);
  if (rs.empty())
    c.reason =
        "no QUIC socket of this finding was probed (QUIC is probed in check --sandbox, with an "
        "nginx built with HTTP/3)";
  else if (q == engine::probe_question::quic_tokens_kept)
    judges::quic_tokens_kept(c, rs, o);
  else
    judges::quic_early_data(c, rs);
  return true;
}

}  // namespace

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
    case engine::probe_question::upstream_connections:
    case engine::probe_question::upstream_resumption:
    case engine::probe_question::upstream_sni:
    case engine::probe_question::upstream_verification:
    case engine::probe_question::quic_tokens_kept:
    case engine::probe_question::quic_early_data:
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
      if (f.level == engine::severity::error && !f.location.file.empty() && r.first == f.location)
        rejected = &r;
    auto untested = f.server.empty() ? options.untested.end() : options.untested.find(f.server);
    if (rejected) {
      // nginx -t's verdict answers nginx_t_verdict, and any error it rejects.
      c.result = verdict::confirmed;
      c.reason = "the sandbox nginx rejects it: " + rejected->second;
      c.evidence.push_back({"nginx -t", rejected->second, ""});
    } else if (untested != options.untested.end()) {
      c.reason = "the sandbox did not start this server: " + untested->second;
    } else if (judges::answered_by_warning(q) && judges::nginx_t_warning(c, q, options)) {
      // nginx -t's own word: no probe needed.
    } else if (q == engine::probe_question::session_crosses_names) {
      judges::session_crosses_names(c, options);  // the crossing probes, not the main ones
    } else if (judge_upstream(c, q, options)) {
      // The stand-in upstreams' counts, not the probes of nginx's own sockets.
    } else if (judge_quic(c, q, options)) {
      // The QUIC probes of the finding's QUIC sockets.
    } else if (rs.empty()) {
      c.reason = f.ports.empty() ? "no target could be probed"
                                 : "no probed endpoint serves this finding's listen socket";
    } else {
      switch (q) {
        case engine::probe_question::settings_per_name:
          judges::settings_per_name(c, rs, results, options);
          break;
        case engine::probe_question::handshake_under_name:
          judges::handshake_under_name(c, rs, options);
          break;
        case engine::probe_question::tls13_resumes:
          judges::tls13_resumes(c, rs, options);
          break;
        case engine::probe_question::tls12_resumes:
          judges::tls12_resumes(c, rs);
          break;
        case engine::probe_question::key_domains:
          judges::key_domains(c, rs, options);
          break;
        case engine::probe_question::saved_session_resumes:
          judges::saved_session_resumes(c, rs, options);
          break;
        case engine::probe_question::staple_present:
          judges::staple_present(c, rs);
          break;
        case engine::probe_question::tls13_handshake:
          judges::tls13_handshake(c, rs);
          break;
        case engine::probe_question::protocols_per_name:
          judges::protocols_per_name(c, rs);
          break;
        case engine::probe_question::hsts_header_served:
          if (options.sandbox_responses)
            c.reason =
                "the sandbox answers with its own response, not the server's add_header, "
                "locations or upstreams: its headers say nothing about this server's";
          else
            judges::hsts_header_served(c, rs);
          break;
        case engine::probe_question::session_id_resumption:
          judges::session_id_resumption(c, rs);
          break;
        case engine::probe_question::early_data_replayed:
          judges::early_data_replayed(c, rs);
          break;
        case engine::probe_question::closes_without_close_notify:
          if (options.sandbox_responses)
            c.reason =
                "the sandbox answers with its own response, not the server's return: run check "
                "--endpoint against the server";
          else
            judges::closes_without_close_notify(c, rs);
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
        case engine::probe_question::upstream_connections:
        case engine::probe_question::upstream_resumption:
        case engine::probe_question::upstream_sni:
        case engine::probe_question::upstream_verification:
        case engine::probe_question::quic_tokens_kept:
        case engine::probe_question::quic_early_data:
        case engine::probe_question::none:
          c.reason = "no probe measures this rule";
          break;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ngxtls::check
