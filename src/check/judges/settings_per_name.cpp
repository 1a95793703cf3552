// The judge of probe question settings_per_name.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "check/judges/judges.hpp"
#include "config/values.hpp"

namespace ngxtls::check::judges {

// docs/nginx-facts.md#default-server-rules: on a socket the default server's cache, timeout and
// ticket keys apply to every name. Tickets under this server's name show whose settings sealed
// them.
void settings_per_name(checked_finding& c, const std::vector<const probe::target_result*>& rs,
                       const std::vector<probe::target_result>& all, const judge_options& o) {
  const auto& f = c.finding;
  // The rule's evidence names the setting and the default server's value of it
  // ("ssl_session_timeout", "default server ssl_session_timeout"), in whatever order.
  const engine::evidence* own_fact = nullptr;
  const engine::evidence* default_fact = nullptr;
  for (const char* setting : {"ssl_session_ticket_key", "ssl_session_timeout", "ssl_session_cache"})
    for (const auto& e : f.facts) {
      if (e.name == setting) own_fact = &e;
      if (e.name == std::string("default server ") + setting) default_fact = &e;
    }
  if (!own_fact || !default_fact || default_fact->name != "default server " + own_fact->name) {
    c.reason = "the finding names no setting";
    return;
  }
  const std::string& name = own_fact->name;
  const std::string& own = own_fact->value;
  const std::string& dflt = default_fact->value;
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
    const auto own_s = config::parse_time_s(own), dflt_s = config::parse_time_s(dflt);
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

}  // namespace ngxtls::check::judges
