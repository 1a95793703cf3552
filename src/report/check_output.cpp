#include "report/check_output.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/probe_output.hpp"
#include "report/sarif_output.hpp"
#include "report/terminal_text.hpp"

namespace ngxtls::report {

nlohmann::json sandbox_json(const sandbox_summary& sb);
nlohmann::json location_json(const source_location& l);  // lint_output.cpp: {file, line, column}

nlohmann::json nginx_test_json(const nginx_test_summary& t) {
  return {{"verdict", t.verdict},
          {"location", t.where.file.empty() ? nlohmann::json(nullptr) : location_json(t.where)},
          {"message", t.message},
          {"reason", t.reason}};
}

namespace {

// The upstream measurements of check --sandbox, one block per TLS upstream.
std::string upstreams_text(const std::vector<check::upstream_measurement>& ups) {
  if (ups.empty()) return "";
  std::string out = "upstream TLS (stand-in upstreams on loopback, " +
                    std::to_string(check::k_upstream_requests) + " requests per route from " +
                    std::to_string(check::k_upstream_client_connections) +
                    " client connections, one at a time):\n";
  for (const auto& u : ups) {
    out += "  " + terminal_safe(u.server) +
           (u.location.empty() ? "" : " location " + terminal_safe(u.location)) + " (" +
           terminal_safe(to_string(u.pass)) + "):\n";
    auto line = [&](const char* what, const check::upstream_counts& c) {
      if (!c.measured) return;
      std::string protocols;
      for (const auto& p : c.protocols) protocols += (protocols.empty() ? "" : ", ") + p;
      out += std::string("    ") + what + ": " + terminal_safe(check::describe(u, c)) + "; " +
             std::to_string(c.ok) + " answered 2xx, " + std::to_string(c.bad_gateway) + " 502" +
             (protocols.empty() ? "" : "; " + protocols) + "\n";
    };
    line("as configured", u.as_configured);
    line("certificate for another name", u.wrong_name);
    line("with the keepalive fix", u.fixed);
    if (const auto& p = u.price) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "    under load (%d connections, %d ms each): %.0f req/s as configured (%d "
                    "upstream connections, %d full handshakes), %.0f req/s with the fix (%d, "
                    "%d)\n",
                    p->connections, p->duration_ms, p->configured_rps,
                    p->configured_upstream_connections, p->configured_full_handshakes, p->fixed_rps,
                    p->fixed_upstream_connections, p->fixed_full_handshakes);
      out += buf;
    }
  }
  return out;
}

nlohmann::json counts_json(const check::upstream_counts& c) {
  if (!c.measured) return nullptr;
  return {{"requests", c.requests},
          {"ok", c.ok},
          {"bad_gateway", c.bad_gateway},
          {"failed", c.failed},
          {"upstream_connections", c.connections},
          {"full_handshakes", c.full_handshakes},
          {"resumed_handshakes", c.resumed},
          {"upstream_requests", c.upstream_requests},
          {"client_certificates", c.client_certificates},
          {"sni", c.sni},
          {"protocols", c.protocols}};
}

nlohmann::json upstreams_json(const std::vector<check::upstream_measurement>& ups) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& u : ups) {
    nlohmann::json price = nullptr;
    if (const auto& p = u.price)
      price = {{"client_connections", p->connections},
               {"duration_ms", p->duration_ms},
               {"configured_requests_per_second", p->configured_rps},
               {"fixed_requests_per_second", p->fixed_rps},
               {"configured_upstream_connections", p->configured_upstream_connections},
               {"fixed_upstream_connections", p->fixed_upstream_connections},
               {"configured_full_handshakes", p->configured_full_handshakes},
               {"fixed_full_handshakes", p->fixed_full_handshakes}};
    a.push_back({{"server", u.server},
                 {"location", u.location},
                 {"pass", to_string(u.pass)},
                 {"ssl_name", u.ssl_name},
                 {"summary", check::describe(u, u.as_configured)},
                 {"as_configured", counts_json(u.as_configured)},
                 {"wrong_name", counts_json(u.wrong_name)},
                 {"fixed", counts_json(u.fixed)},
                 {"load", price}});
  }
  return a;
}

}  // namespace

void write_check_text(const check_report& r, bool color, std::ostream& os) {
  std::string out;
  const char* reset = color ? "\x1b[0m" : "";
  // The version was only assumed: first line, as in lint's report.
  if (r.lint.notice) out += terminal_safe(notice_line(r.lint)) + '\n';
  out += readings_text(r.lint);
  // nginx's own verdict on the whole config comes before anything ngxtls says about it.
  if (const auto& t = r.nginx_test) {
    const std::string at = t->where.file.empty() ? "" : " at " + to_string(t->where);
    if (t->verdict == "rejected")
      out += std::string(color ? "\x1b[1;31merror\x1b[0m" : "error") +
             ": nginx -t rejects the config" + terminal_safe(at) + ": " +
             terminal_safe(t->message) + '\n';
    else if (t->verdict == "passed")
      out += "nginx -t: the whole config passes\n";
    else if (t->verdict == "not_testable")
      out += "nginx -t: whole config not testable: " + terminal_safe(t->reason) +
             " (nginx: " + terminal_safe(t->message) + terminal_safe(at) + ")\n";
    else
      out += "nginx -t: whole config not tested: " + terminal_safe(t->message) + '\n';
  }
  for (const auto& c : r.checked) {
    const auto& f = c.finding;
    const char* vc = !color                                  ? ""
                     : c.result == check::verdict::confirmed ? "\x1b[1;31m"
                     : c.result == check::verdict::refuted   ? "\x1b[1;32m"
                                                             : "\x1b[1;33m";
    // Config and peer bytes: a terminal must not act on them.
    out += terminal_safe(to_string(f.location)) + ": " + engine::to_string(f.level) + " [" +
           f.rule + "] " + terminal_safe(f.message) + '\n';
    out += std::string("    ") + vc + check::to_string(c.result) + reset + ": " +
           terminal_safe(c.reason) + '\n';
    for (const auto& e : c.evidence)
      out += "      " + terminal_safe(e.name) + " = " + terminal_safe(e.value) +
             (e.target.empty() ? "" : "  (" + terminal_safe(e.target) + ")") + '\n';
    // The fix, as lint's text shows it: what to change is the point of a confirmed finding.
    if (!f.fix.empty()) out += "    fix:\n" + indent_lines(terminal_safe(f.fix, true), "      ");
  }
  if (r.sandbox) {
    const auto& sb = *r.sandbox;
    if (sb.sockets.empty())
      out += "sandbox: no TLS server started\n";
    else
      out +=
          "sandbox: " + sb.nginx_version + " (" + sb.nginx_binary + "), " +
          std::to_string(sb.instances) +
          (sb.instances == 1 ? " master" : " masters with reuseport") + " x " +
          std::to_string(sb.workers) + (sb.workers == 1 ? " worker" : " workers") +
          (sb.reload ? ", reloaded between taking and offering sessions" : "") +
          (sb.pid_namespace ? "; torn down by its PID namespace" : "; torn down by process group") +
          '\n';
    for (const auto& [conf, local] : sb.sockets)
      out += "  " + terminal_safe(conf) + " -> " + terminal_safe(local) + '\n';
    for (const auto& [server, text] : sb.notes)
      out += "  " + (server.empty() ? std::string() : terminal_safe(server) + ": ") +
             terminal_safe(text) + '\n';
    for (const auto& [server, why] : sb.untested)
      out += "  not tested: " + terminal_safe(server) + ": " + terminal_safe(why) + '\n';
  }
  out += upstreams_text(r.upstreams);
  for (const auto& k : r.key_names) out += "key names: " + terminal_safe(k) + '\n';
  for (const auto& n : r.notes) out += "note: " + terminal_safe(n) + '\n';
  for (const auto& e : r.errors)
    out += std::string(color ? "\x1b[1;31merror\x1b[0m" : "error") + ": " + terminal_safe(e) + '\n';
  std::size_t counts[3] = {0, 0, 0};
  for (const auto& c : r.checked) ++counts[static_cast<int>(c.result)];
  out += "assumed nginx " + r.lint.assumed.nginx.str() + " (" +
         terminal_safe(r.lint.assumed.nginx_source) + "), OpenSSL " + r.lint.assumed.openssl.str() +
         " (" + terminal_safe(r.lint.assumed.openssl_source) + ")\n";
  out += std::to_string(r.checked.size()) + " findings: " + std::to_string(counts[0]) +
         " confirmed, " + std::to_string(counts[1]) + " refuted, " + std::to_string(counts[2]) +
         " not testable\n";
  os << out;
}

std::string render_check_text(const check_report& r, bool color) {
  std::ostringstream out;
  write_check_text(r, color, out);
  return std::move(out).str();
}

namespace {

nlohmann::json probe_evidence_json(const check::checked_finding& c) {
  nlohmann::json ev = nlohmann::json::array();
  for (const auto& e : c.evidence)
    ev.push_back({{"name", e.name}, {"value", e.value}, {"target", e.target}});
  return ev;
}

}  // namespace

void write_check_json(const check_report& r, std::ostream& out) {
  json_additions add;
  add.top = {{"probe", probe_json(r.probes)},
             {"key_names", r.key_names},
             {"notes", r.notes},
             {"errors", r.errors}};
  if (r.sandbox) add.top.emplace_back("sandbox", sandbox_json(*r.sandbox));
  if (r.nginx_test) add.top.emplace_back("nginx_test", nginx_test_json(*r.nginx_test));
  if (r.sandbox) add.top.emplace_back("upstreams", upstreams_json(r.upstreams));
  if (r.sandbox) add.top.emplace_back("quic_probe", probe_json(r.quic_probes));
  add.finding = [&](std::size_t i) {
    json_additions::fields f;
    if (i >= r.checked.size()) return f;
    const auto& c = r.checked[i];
    f = {{"verdict", check::to_string(c.result)},
         {"verdict_reason", c.reason},
         {"probe_evidence", probe_evidence_json(c)}};
    return f;
  };
  write_json(r.lint, add, out);
}

std::string render_check_json(const check_report& r) {
  std::ostringstream out;
  write_check_json(r, out);
  return std::move(out).str();
}

nlohmann::json sandbox_json(const sandbox_summary& sb) {
  {
    nlohmann::json j = {{"nginx_binary", sb.nginx_binary},   {"nginx_version", sb.nginx_version},
                        {"instances", sb.instances},         {"workers", sb.workers},
                        {"pid_namespace", sb.pid_namespace}, {"reload", sb.reload}};
    j["sockets"] = nlohmann::json::array();
    for (const auto& [conf, local] : sb.sockets)
      j["sockets"].push_back({{"configured", conf}, {"sandbox", local}});
    j["notes"] = nlohmann::json::array();
    for (const auto& [server, text] : sb.notes)
      j["notes"].push_back({{"server", server}, {"text", text}});
    j["untested"] = nlohmann::json::array();
    for (const auto& [server, why] : sb.untested)
      j["untested"].push_back({{"server", server}, {"reason", why}});
    return j;
  }
}

void write_check_sarif(const check_report& r, const std::string& working_dir, std::ostream& out) {
  sarif_additions add;
  if (r.sandbox) add.run_properties["sandbox"] = sandbox_json(*r.sandbox);
  if (r.nginx_test) add.run_properties["nginx_test"] = nginx_test_json(*r.nginx_test);
  if (!r.notes.empty()) add.run_properties["check_notes"] = r.notes;
  if (!r.errors.empty()) add.run_properties["check_errors"] = r.errors;
  add.result = [&](std::size_t i, nlohmann::json& res) {
    if (i >= r.checked.size()) return;
    const auto& c = r.checked[i];
    auto& props = res["properties"];
    if (props.is_null()) props = nlohmann::json::object();
    props["verdict"] = check::to_string(c.result);
    props["verdict_reason"] = c.reason;
    props["probe_evidence"] = probe_evidence_json(c);
    // The probe contradicts a refuted finding: it stays in the log as a note.
    if (c.result == check::verdict::refuted) {
      props["lint_level"] = res["level"];
      res["level"] = "note";
    }
  };
  write_sarif_sorted(r.lint, working_dir, add, out);
}

std::string render_check_sarif(const check_report& r, const std::string& working_dir) {
  std::ostringstream out;
  write_check_sarif(r, working_dir, out);
  return std::move(out).str();
}

}  // namespace ngxtls::report
