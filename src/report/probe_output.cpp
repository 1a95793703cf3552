#include "report/probe_output.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/prometheus_text.hpp"
#include "report/terminal_text.hpp"

namespace ngxtls::report {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string run_label(const probe::run_result& r) {
  std::string p = r.protocol == "TLSv1.3" ? "TLS 1.3" : "TLS 1.2";
  if (r.protocol == "TLSv1.3") return p;
  return p + (r.mechanism == "ticket" ? " tickets" : " session IDs");
}

std::string percent(double rate) {
  return fmt("%.0f%%", rate * 100.0);
}

std::string count_of(const probe::run_result& r) {
  return std::to_string(r.resumed) + " of " + std::to_string(r.attempts) + " attempts resumed";
}

void run_verdicts(const probe::run_result& r, std::vector<std::string>& out) {
  std::string label = run_label(r);
  if (!r.supported) {
    out.push_back(label + ": not offered by the server (" + r.error.value_or("refused") + ")");
    return;
  }
  if (r.error && r.connections == 0) {
    out.push_back(label + ": could not be measured: " + *r.error);
    return;
  }
  if (!r.session_offered) {
    if (r.mechanism == "ticket" && r.protocol == "TLSv1.2")
      out.push_back(label + ": the server issues no TLS 1.2 session tickets");
    else if (r.protocol == "TLSv1.3")
      out.push_back(label +
                    ": no session ticket arrived after the handshake: no resumption possible");
    else
      out.push_back(label + ": the server gave no session to resume");
    return;
  }
  std::string source = r.session_source == "sess_in" ? " (session from --sess-in)" : "";
  std::size_t names = r.ticket_key_names.size();
  if (r.attempts == 0) {
    out.push_back(label + ": no resumption attempt completed" +
                  (r.last_attempt_error ? ": " + *r.last_attempt_error : std::string()));
    return;
  }
  if (r.resumed == r.attempts) {
    std::string how;
    if (r.mechanism == "session_id")
      how = "session IDs, server-side cache";
    else if (r.stateless_tickets > 0 && names == 1)
      how = "stateless tickets, one ticket key";
    else if (r.stateless_tickets > 0)
      how = "stateless tickets";
    else if (r.stateful_tickets > 0)
      how = "stateful tickets, server-side cache";
    out.push_back(label + " resumption works: " + count_of(r) + source +
                  (how.empty() ? "" : " (" + how + ")"));
  } else if (r.resumed == 0) {
    std::string why;
    if (r.mechanism == "session_id")
      why = r.session_id_issued
                ? "the server does not find its session IDs again (no shared session cache?)"
                : "the server sent no session ID: it keeps no session cache";
    else if (r.stateful_tickets > 0 && r.stateless_tickets == 0)
      why = "tickets arrive (" + fmt("%.0f", r.tickets_per_connection) +
            " per connection) but they are stateful (" + std::to_string(r.ticket_max_bytes) +
            " bytes, a session ID) and the server keeps no session cache to find them";
    else if (r.session_source == "sess_in")
      why = "the saved ticket is no longer accepted (its key is gone, or the session expired)";
    else
      why = "tickets arrive but are not accepted";
    out.push_back(label + " resumption fails: " + count_of(r) + source + ": " + why);
  } else {
    out.push_back(label + " resumption is partial: " + count_of(r) + " (" + percent(r.rate) + ")" +
                  source);
  }
  if (r.single_use_pattern)
    out.push_back(
        label +
        ": only one attempt resumed with the same session: the server looks to make tickets "
        "single-use (RFC 8446 section 8.1); rerun with --fresh-tickets. This is not a sign of "
        "several ticket keys");
  if (names >= 2 && !r.single_use_pattern)
    out.push_back(label + ": connections reach " + std::to_string(names) +
                  " different ticket keys; expect about 1/" + std::to_string(names) +
                  " resumption");
  if (names == 0 && r.stateless_tickets >= 2 && r.opaque_tickets == r.stateless_tickets)
    out.push_back(
        label +
        ": tickets are opaque (no key name repeats across tickets): no claim about ticket keys");
}

}  // namespace

std::vector<std::string> probe_verdicts(const probe::target_result& t) {
  std::vector<std::string> out;
  if (t.error) {
    out.push_back("cannot probe " + t.target + ": " + *t.error);
    if (t.protocols.empty() || !t.certificate) return out;
  }
  for (const auto& r : t.protocols) run_verdicts(r, out);
  const auto& o = t.ocsp;
  if (o.status == probe::ocsp_status::working) {
    std::string line = "OCSP stapling works: a valid staple on " + std::to_string(o.stapled) +
                       " of " + std::to_string(o.connections) + " connections";
    if (o.cert_status) line += ", certificate status " + *o.cert_status;
    if (!o.first_connection_stapled) line += " (none on the first connection: fetched lazily)";
    out.push_back(line);
  } else if (o.status == probe::ocsp_status::invalid) {
    out.push_back("OCSP stapling is broken: " + std::to_string(o.stapled - o.valid_staples) +
                  " of " + std::to_string(o.stapled) + " staples are not valid (" +
                  o.staple_status.value_or("?") + "): " + o.staple_reason.value_or("?"));
  } else if (o.status == probe::ocsp_status::absent) {
    out.push_back("OCSP stapling: no staple on any of " + std::to_string(o.connections) +
                  " connections over " + fmt("%.1f", o.waited_ms / 1000.0) +
                  " s although the certificate names an OCSP responder");
  } else if (o.status == probe::ocsp_status::not_applicable) {
    out.push_back("OCSP stapling: not applicable (the certificate names no OCSP responder)");
  }
  if (t.certificate && t.certificate->days_to_expiry < 0)
    out.push_back("the certificate has expired");
  return out;
}

std::string probe_text(const std::vector<probe::target_result>& results, bool color) {
  std::ostringstream s;
  const char* bold = color ? "\033[1m" : "";
  const char* reset = color ? "\033[0m" : "";
  for (const auto& t : results) {
    // Every string here may come from the peer (certificate names, OCSP URLs, TLS errors) or
    // from a target list: escaped, line feeds too, so none can move the cursor, recolour the
    // terminal or forge a line of the report.
    s << bold << terminal_safe(t.target) << reset;
    if (!t.address.empty())
      s << " (" << terminal_safe(t.address)
        << (t.sni.empty() ? "" : ", SNI " + terminal_safe(t.sni)) << ")";
    s << "\n";
    for (const auto& v : probe_verdicts(t)) s << "  " << terminal_safe(v) << "\n";
    for (const auto& r : t.protocols) {
      if (r.connections == 0) continue;
      s << "  " << run_label(r) << " [" << terminal_safe(r.mode) << "]: " << r.resumed << "/"
        << r.attempts << " resumed";
      if (r.failed_connections) s << ", " << r.failed_connections << " failed";
      s << "; " << terminal_safe(r.negotiated_protocol) << " " << terminal_safe(r.cipher);
      if (!r.group.empty()) s << " " << terminal_safe(r.group);
      if (!r.alpn.empty()) s << " ALPN " << terminal_safe(r.alpn);
      s << "\n";
      if (r.tickets > 0) {
        s << "    tickets: " << r.tickets << " (" << fmt("%.1f", r.tickets_per_connection)
          << " per connection, " << r.stateless_tickets << " stateless, " << r.stateful_tickets
          << " stateful, " << r.ticket_min_bytes << "-" << r.ticket_max_bytes << " bytes)";
        if (r.lifetime_hint_s) s << ", lifetime hint " << *r.lifetime_hint_s << " s";
        if (r.max_early_data) s << ", max early data " << r.max_early_data << " bytes";
        s << "\n";
        for (const auto& [name, n] : r.ticket_key_names)
          s << "    ticket key " << terminal_safe(name) << ": " << n << " tickets\n";
        if (r.opaque_tickets) s << "    opaque tickets: " << r.opaque_tickets << "\n";
      }
      s << "    handshake (connect + TLS): full median " << fmt("%.2f", r.full_handshake_ms.median)
        << " ms, p90 " << fmt("%.2f", r.full_handshake_ms.p90) << " ms";
      if (r.resumed_handshake_ms.count)
        s << "; resumed median " << fmt("%.2f", r.resumed_handshake_ms.median) << " ms, p90 "
          << fmt("%.2f", r.resumed_handshake_ms.p90) << " ms";
      s << "\n";
    }
    if (t.certificate) {
      const auto& c = *t.certificate;
      s << "  certificate: " << terminal_safe(c.subject) << ", issuer " << terminal_safe(c.issuer)
        << ", " << terminal_safe(c.key_type) << " " << c.key_bits << " bits, expires in "
        << fmt("%.0f", std::floor(c.days_to_expiry)) << " days, OCSP URL "
        << (c.ocsp_url_present ? terminal_safe(c.ocsp_urls.front()) : std::string("none")) << "\n";
    }
    if (t.ocsp.checked && t.ocsp.connections > 0) {
      s << "  OCSP: " << probe::to_string(t.ocsp.status) << ", staple on " << t.ocsp.stapled << "/"
        << t.ocsp.connections << " connections";
      if (t.ocsp.stapled > 0) s << " (" << t.ocsp.valid_staples << " valid)";
      if (t.ocsp.next_update_in_s) s << ", next update in " << *t.ocsp.next_update_in_s << " s";
      if (t.ocsp.staple_status)
        s << "; staple " << terminal_safe(*t.ocsp.staple_status) << ": "
          << terminal_safe(t.ocsp.staple_reason.value_or(""));
      s << "\n";
    }
  }
  return s.str();
}

namespace {

nlohmann::json timing_json(const probe::timing_ms& t) {
  if (t.count == 0) return {{"count", 0}, {"median", nullptr}, {"p90", nullptr}};
  return {{"count", t.count}, {"median", t.median}, {"p90", t.p90}};
}

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json probe_json(const std::vector<probe::target_result>& results) {
  nlohmann::json targets = nlohmann::json::array();
  for (const auto& t : results) {
    nlohmann::json j;
    j["target"] = t.target;
    j["address"] = t.address;
    j["sni"] = t.sni;
    j["error"] = opt(t.error);
    j["elapsed_ms"] = t.elapsed_ms;
    j["verdicts"] = probe_verdicts(t);
    nlohmann::json protos = nlohmann::json::array();
    for (const auto& r : t.protocols) {
      nlohmann::json p;
      p["protocol"] = r.protocol;
      p["mechanism"] = r.mechanism;
      p["mode"] = r.mode;
      p["supported"] = r.supported;
      p["error"] = opt(r.error);
      p["session_source"] = r.session_source;
      p["session_offered"] = r.session_offered;
      p["attempts"] = r.attempts;
      p["resumed"] = r.resumed;
      p["rate"] = r.rate;
      p["failed_connections"] = r.failed_connections;
      p["outcomes"] = r.outcomes;
      nlohmann::json statuses = nlohmann::json::object();
      for (const auto& [status, n] : r.http_statuses) statuses[std::to_string(status)] = n;
      p["http_statuses"] = statuses;
      p["single_use_pattern"] = r.single_use_pattern;
      p["ticket_key_names"] = nlohmann::json::object();
      for (const auto& [name, n] : r.ticket_key_names) p["ticket_key_names"][name] = n;
      p["key_domains"] = r.ticket_key_names.size();
      p["opaque_tickets"] = r.opaque_tickets;
      p["offered_key_name"] = opt(r.offered_key_name);
      p["tickets"] = r.tickets;
      p["stateful_tickets"] = r.stateful_tickets;
      p["stateless_tickets"] = r.stateless_tickets;
      p["ticket_size_bytes"] = {{"min", r.ticket_min_bytes}, {"max", r.ticket_max_bytes}};
      p["lifetime_hint_s"] = opt(r.lifetime_hint_s);
      p["tickets_per_connection"] = r.tickets_per_connection;
      p["max_tickets_per_connection"] = r.max_tickets_per_connection;
      p["max_early_data"] = r.max_early_data;
      p["session_id_issued"] = r.session_id_issued;
      p["full_handshake_ms"] = timing_json(r.full_handshake_ms);
      p["resumed_handshake_ms"] = timing_json(r.resumed_handshake_ms);
      p["connections"] = r.connections;
      p["elapsed_ms"] = r.elapsed_ms;
      p["negotiated_protocol"] = r.negotiated_protocol;
      p["cipher"] = r.cipher;
      p["group"] = r.group;
      p["alpn"] = r.alpn;
      protos.push_back(std::move(p));
    }
    j["protocols"] = std::move(protos);
    const auto& o = t.ocsp;
    j["ocsp"] = {{"checked", o.checked},
                 {"status", probe::to_string(o.status)},
                 {"connections", o.connections},
                 {"stapled", o.stapled},
                 {"valid_staples", o.valid_staples},
                 {"staple_status", opt(o.staple_status)},
                 {"staple_reason", opt(o.staple_reason)},
                 {"first_connection_stapled", o.first_connection_stapled},
                 {"waited_ms", o.waited_ms},
                 {"response_status", opt(o.response_status)},
                 {"cert_status", opt(o.cert_status)},
                 {"revocation_time_unix", opt(o.revocation_time_unix)},
                 {"revocation_reason", opt(o.revocation_reason)},
                 {"next_update_in_s", opt(o.next_update_in_s)},
                 {"this_update_age_s", opt(o.this_update_age_s)}};
    if (t.certificate) {
      const auto& c = *t.certificate;
      j["certificate"] = {{"subject", c.subject},
                          {"issuer", c.issuer},
                          {"key_type", c.key_type},
                          {"key_bits", c.key_bits},
                          {"not_after_unix", c.not_after_unix},
                          {"days_to_expiry", c.days_to_expiry},
                          {"ocsp_url_present", c.ocsp_url_present},
                          {"ocsp_urls", c.ocsp_urls},
                          {"dns_names", c.dns_names},
                          {"sha256", c.sha256_hex},
                          {"chain_length", c.chain_length}};
    } else {
      j["certificate"] = nullptr;
    }
    targets.push_back(std::move(j));
  }
  return {{"targets", std::move(targets)}};
}

namespace {

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

struct metric {
  std::string name, help;
  std::vector<std::string> lines;
};

}  // namespace

std::string probe_prometheus(const std::vector<probe::target_result>& results) {
  std::vector<metric> m = {
      {"ngxtls_probe_up", "1 when the target could be probed, 0 when not", {}},
      {"ngxtls_probe_resumption_rate", "Resumed attempts / attempts (0..1)", {}},
      {"ngxtls_probe_resumption_attempts", "Resumption attempts that completed a handshake", {}},
      {"ngxtls_probe_resumption_resumed", "Attempts with SSL_session_reused() == 1", {}},
      {"ngxtls_probe_ticket_key_names", "Distinct ticket key names seen (key domains)", {}},
      {"ngxtls_probe_tickets_per_connection", "Session tickets received per connection", {}},
      {"ngxtls_probe_handshake_seconds", "Connect + TLS handshake time, by kind and quantile", {}},
      {"ngxtls_probe_ocsp_stapled_connections", "Connections that carried an OCSP staple", {}},
      {"ngxtls_probe_ocsp_checked_connections", "Connections that asked for an OCSP staple", {}},
      {"ngxtls_probe_ocsp_stapling_working",
       "1 when every staple was valid, 0 when none arrived or one was not valid (no sample when "
       "not applicable)",
       {}},
      {"ngxtls_probe_certificate_expiry_days", "Days until the certificate's notAfter", {}},
      {"ngxtls_probe_ocsp_staple_valid",
       "1 when the staple is valid for the certificate, 0 when not; label status says why (only "
       "when stapled)",
       {}},
  };
  auto add = [&](std::size_t i, const std::string& labels, double v) {
    m[i].lines.push_back(m[i].name + "{" + labels + "} " + number(v));
  };
  for (const auto& t : results) {
    std::string tl = "target=\"" + prometheus_label_value(t.target) + "\"";
    add(0, tl, t.error ? 0 : 1);
    for (const auto& r : t.protocols) {
      if (r.connections == 0) continue;
      std::string l = tl + ",protocol=\"" + r.protocol + "\",mechanism=\"" + r.mechanism +
                      "\",mode=\"" + r.mode + "\"";
      if (r.session_offered) {
        add(1, l, r.rate);
        add(2, l, r.attempts);
        add(3, l, r.resumed);
      }
      add(4, l, static_cast<double>(r.ticket_key_names.size()));
      add(5, l, r.tickets_per_connection);
      if (r.full_handshake_ms.count) {
        add(6, l + ",kind=\"full\",quantile=\"0.5\"", r.full_handshake_ms.median / 1000.0);
        add(6, l + ",kind=\"full\",quantile=\"0.9\"", r.full_handshake_ms.p90 / 1000.0);
      }
      if (r.resumed_handshake_ms.count) {
        add(6, l + ",kind=\"resumed\",quantile=\"0.5\"", r.resumed_handshake_ms.median / 1000.0);
        add(6, l + ",kind=\"resumed\",quantile=\"0.9\"", r.resumed_handshake_ms.p90 / 1000.0);
      }
    }
    if (t.ocsp.checked && t.ocsp.connections > 0) {
      add(7, tl, t.ocsp.stapled);
      add(8, tl, t.ocsp.connections);
      using probe::ocsp_status;
      if (t.ocsp.status == ocsp_status::working || t.ocsp.status == ocsp_status::absent ||
          t.ocsp.status == ocsp_status::invalid)
        add(9, tl, t.ocsp.status == ocsp_status::working ? 1 : 0);
      if (t.ocsp.staple_status)
        add(11, tl + ",status=\"" + prometheus_label_value(*t.ocsp.staple_status) + "\"",
            t.ocsp.status == ocsp_status::working ? 1 : 0);
    }
    if (t.certificate) add(10, tl, t.certificate->days_to_expiry);
  }
  std::ostringstream s;
  for (const auto& x : m) {
    if (x.lines.empty()) continue;
    s << "# HELP " << x.name << " " << x.help << "\n# TYPE " << x.name << " gauge\n";
    for (const auto& line : x.lines) s << line << "\n";
  }
  return s.str();
}

}  // namespace ngxtls::report
