#include "check/workflow.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "base/error.hpp"
#include "check/load_findings.hpp"
#include "check/upstreams.hpp"
#include "config/values.hpp"
#include "engine/engine.hpp"
#include "probe/plan.hpp"
#include "probe/target.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/sandbox_process.hpp"
#include "tls/ticket_key.hpp"

namespace ngxtls::check {

namespace {

// One check's state between its steps.
struct session {
  const check_request& req;
  const check_hooks& hooks;
  check_run out;
  probe::probe_options po;
  std::unique_ptr<sandbox::sandbox> sb;
  std::vector<probe::target> targets;
  std::size_t dial_count = 1;
  bool names_capped = false;
  bool swap = false;  // --sandbox --baseline: start from the baseline, reload into the config
  judge_options jo;
};

// Tells the command line the step the check is at.
void step(const session& s, const std::string& what) {
  if (s.hooks.step) s.hooks.step(what);
}

// Before any thread exists (the namespace is per thread; later threads inherit it): ngxtls,
// the sandbox nginx and the prober then share a loopback-only network, and nothing the config
// names can reach another host. NGXTLS_SANDBOX_NO_NETNS=1 skips it (tests of the path taken
// without root).
std::pair<bool, std::string> isolate_network() {
  std::string why;
  const char* no_netns = std::getenv("NGXTLS_SANDBOX_NO_NETNS");
  if (no_netns && *no_netns && std::string(no_netns) != "0")
    return {false, "NGXTLS_SANDBOX_NO_NETNS is set"};
  const bool isolated = sandbox::enter_loopback_network_namespace(why);
  return {isolated, why};
}

// lint's pipeline, with lint's settings: the .ngxtls.toml (--config), the flags, the versions.
void lint_config(session& s, const std::string& nginx_bin) {
  engine::lint_hooks hooks =
      s.hooks.lint_hooks ? s.hooks.lint_hooks(nginx_bin) : engine::lint_hooks{};
  s.out.lint = engine::lint(s.req.lint, engine::all_rules(), hooks);
}

// The probe options of the request, with Ctrl-C when --load asks for it.
probe::probe_options probe_options_of(const check_request& r) {
  probe::probe_options po = r.probe;
  po.stop = r.load && r.sandbox ? r.stop : nullptr;
  return po;
}

// One target per sandbox socket and server name, at most --max-names.
std::vector<probe::target> sandbox_targets(session& s) {
  std::vector<probe::target> out;
  for (const auto& sock : s.sb->sockets())
    for (const auto& n : sock.names) {
      if (out.size() >= static_cast<std::size_t>(s.req.max_names)) {
        s.names_capped = true;
        return out;
      }
      const std::string addr = "127.0.0.1:" + std::to_string(sock.port);
      out.push_back(n.empty() ? probe::parse_target(addr) : probe::parse_target(addr, n));
    }
  return out;
}

// Starts the sandbox from the config (or the baseline, with --baseline); a sandbox that cannot
// start leaves the lint report standing, every verdict not testable.
void start_sandbox(session& s, const std::string& nginx_bin, bool isolated,
                   const std::string& why_not) {
  sandbox::sandbox_options so;
  so.nginx_binary = nginx_bin;
  so.instances = s.req.instances;
  so.network_isolated = isolated;
  so.no_namespace_reason = why_not;
  so.on_step = s.hooks.step;
  try {
    s.sb = std::make_unique<sandbox::sandbox>(
        s.swap ? *s.out.lint.baseline_model : *s.out.lint.models.front(), so);
    s.targets = sandbox_targets(s);
  } catch (const target_error& e) {
    s.out.sandbox_failure = e.what();
  }
}

// One probe target per endpoint (or backend) and server name.
void aim_at_endpoints(session& s) {
  const auto names =
      probe_names(*s.out.lint.models.front(), static_cast<std::size_t>(s.req.max_names));
  s.names_capped = names.size() == static_cast<std::size_t>(s.req.max_names);
  std::vector<std::optional<std::string>> dials;
  if (s.req.connect.empty()) dials.push_back(std::nullopt);
  for (const auto& c : s.req.connect) dials.push_back(c);
  s.dial_count = s.req.endpoints.size() * dials.size();
  for (const auto& e : s.req.endpoints)
    for (const auto& d : dials) {
      if (names.empty()) s.targets.push_back(probe::parse_target(e, std::nullopt, d));
      for (const auto& n : names) s.targets.push_back(probe::parse_target(e, n, d));
    }
}

// One target per sandbox QUIC socket and server name, at most --max-names.
std::vector<probe::target> quic_targets(const session& s) {
  std::vector<probe::target> out;
  for (const auto& sock : s.sb->quic_sockets())
    for (const auto& n : sock.names) {
      if (out.size() >= static_cast<std::size_t>(s.req.max_names)) return out;
      const std::string addr = "127.0.0.1:" + std::to_string(sock.port);
      out.push_back(n.empty() ? probe::parse_target(addr) : probe::parse_target(addr, n));
    }
  return out;
}

// The QUIC probe of one QUIC socket and name (its UDP port is the target's), offering `carried`
// first when given.
probe::target_result quic_probe_of(const session& s, const probe::target& t,
                                   const probe::quic_credentials* carried) {
  probe::target_result r;
  r.target = t.text;
  r.sni = t.sni;
  auto po = s.po;
  po.quic = probe::quic_mode::always;
  po.quic_carried = carried;
  probe::probe_quic(t, r, po);
  if (r.quic) r.address = r.quic->address;
  return r;
}

// "port SNI" of a target: what a session or token taken before a reload is offered to after it.
std::string reload_key(const probe::target& t) {
  return std::to_string(t.port) + " " + t.sni;
}

// Before a reload: what each QUIC socket and name gives a client to bring back.
std::map<std::string, probe::quic_credentials> take_quic_credentials(const session& s) {
  std::map<std::string, probe::quic_credentials> out;
  for (const auto& t : quic_targets(s)) {
    auto r = quic_probe_of(s, t, nullptr);
    if (r.quic && !r.quic->error) out[reload_key(t)] = r.quic->credentials;
  }
  return out;
}

// The QUIC probes after the TCP ones (after the reload with --reload, offering `taken`).
void probe_quic_sockets(session& s, const std::map<std::string, probe::quic_credentials>* taken) {
  if (!s.sb || s.sb->quic_sockets().empty()) return;
  step(s, "probing " + std::to_string(s.sb->quic_sockets().size()) + " QUIC socket" +
              (s.sb->quic_sockets().size() == 1 ? "" : "s"));
  for (const auto& t : quic_targets(s)) {
    const probe::quic_credentials* carried = nullptr;
    if (taken)
      if (auto it = taken->find(reload_key(t)); it != taken->end()) carried = &it->second;
    s.out.quic_probes.push_back(quic_probe_of(s, t, carried));
  }
}

// Takes a session per target, reloads every master (into the new config with --baseline),
// then offers it again (docs/nginx-facts.md#ticket-keys-per-instance; ticket key rotation).
void probe_across_reload(session& s) {
  std::map<std::string, std::string> saved;  // "port SNI" -> session file
  const auto key = reload_key;
  for (std::size_t i = 0; i < s.targets.size(); ++i) {
    auto p1 = s.po;
    p1.sess_out = s.sb->run_dir() + "/session-" + std::to_string(i) + ".pem";
    try {
      auto r = probe::run_probe({s.targets[i]}, p1);
      if (!r.empty() && !r.front().error) saved[key(s.targets[i])] = *p1.sess_out;
    } catch (const target_error& e) {
      s.out.notes.push_back(s.targets[i].text +
                            " gave no session to save before the reload: " + e.what());
    }
  }
  const auto quic_taken = take_quic_credentials(s);
  if (s.swap) {
    s.sb->reload_into(*s.out.lint.models.front());
    s.targets = sandbox_targets(s);
  } else {
    s.sb->reload();
  }
  for (const auto& t : s.targets) {
    auto p2 = s.po;
    if (auto it = saved.find(key(t)); it != saved.end()) p2.sess_in = it->second;
    auto r = probe::run_probe({t}, p2);
    s.out.probes.insert(s.out.probes.end(), r.begin(), r.end());
  }
  probe_quic_sockets(s, &quic_taken);
}

void probe_targets(session& s) {
  if (s.hooks.step && !s.targets.empty()) {
    // The names being probed, and how many are done (targets are probed in parallel).
    std::string names;
    for (std::size_t i = 0; i < s.targets.size() && i < 3; ++i)
      names += (i ? ", " : "") + (s.targets[i].sni.empty() ? "(no SNI)" : s.targets[i].sni);
    if (s.targets.size() > 3) names += ", ...";
    const std::string what = "probing " + std::to_string(s.targets.size()) +
                             (s.targets.size() == 1 ? " target" : " targets") + " (" + names + ")";
    s.hooks.step(what);
    s.po.on_progress = [&s, what](const probe::progress& p) {
      s.hooks.step(what + ": " + std::to_string(p.targets_done) + " done, " +
                   std::to_string(p.done) + "/" + std::to_string(p.planned) + " connections");
    };
  }
  if (s.sb && (s.req.reload || s.swap))
    probe_across_reload(s);
  else if (!s.targets.empty())
    s.out.probes = probe::run_probe(s.targets, s.po);
  s.po.on_progress = nullptr;
  if (s.sb && !(s.req.reload || s.swap)) probe_quic_sockets(s, nullptr);
}

// A private directory for session files: the sandbox's run directory, else a new one removed
// when the crossings are done.
struct scratch_dir {
  const sandbox::sandbox* sb;
  std::string path;
  const std::string& get() {
    if (!path.empty()) return path;
    if (sb) return path = sb->run_dir();
    std::string tmpl = (std::filesystem::temp_directory_path() / "ngxtls-check-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw target_error("check: cannot create a temporary directory");
    return path = tmpl;
  }
  ~scratch_dir() {
    std::error_code ec;
    if (!sb && !path.empty()) std::filesystem::remove_all(path, ec);
  }
};

// A session taken under `from`'s name, offered under `to`'s, over `proto`.
session_crossing cross_once(const session& s, const probe::target& from, const probe::target& to,
                            int config_port, const char* proto, const std::string& file) {
  const bool is13 = std::string(proto) == "TLSv1.3";
  session_crossing x;
  x.from_sni = from.sni;
  x.to_sni = to.sni;
  x.port = config_port;
  x.target = to.connect_host + ":" + std::to_string(to.connect_port);
  x.protocol = proto;
  auto p1 = s.po;
  p1.tls13 = is13;
  p1.tls12 = !is13;
  p1.attempts = 1;
  p1.ocsp = false;
  p1.sess_in.reset();
  p1.sess_out = file;
  try {
    auto r1 = probe::run_probe({from}, p1);
    x.taken = !r1.empty() && !r1.front().error;
  } catch (const target_error& e) {
    x.failure = e.what();
  }
  if (!x.taken) return x;
  auto p2 = p1;
  p2.sess_out.reset();
  p2.sess_in = file;
  p2.attempts = std::min(s.req.probe.attempts, 10);
  std::vector<probe::target_result> r2;
  try {
    r2 = probe::run_probe({to}, p2);
  } catch (const target_error& e) {
    x.failure = e.what();
  }
  if (!r2.empty())
    for (const auto& run : r2.front().protocols)
      if (probe::to_string(run.protocol) == proto &&
          run.mechanism == probe::resumption_mechanism::ticket) {
        x.attempts = run.attempts;
        x.resumed = run.resumed;
        x.failed = run.failed_connections;
        x.http_statuses = run.http_statuses;
        if (run.last_attempt_error)
          x.failure = *run.last_attempt_error;
        else if (run.error)
          x.failure = *run.error;
        break;
      }
  std::error_code ec;
  std::filesystem::remove(file, ec);
  return x;
}

// Sessions across names (cross-server-resumption): per finding, a session taken under another
// name of its socket, offered under the finding's server name (as nginx matches it), per
// protocol.
std::vector<session_crossing> cross_names(const session& s) {
  std::vector<session_crossing> crossings;
  const std::map<int, int> pm = s.sb ? s.sb->port_map() : std::map<int, int>{};
  scratch_dir scratch{s.sb.get(), {}};
  std::set<std::string> done;
  for (const auto& f : s.out.lint.findings.front()) {
    if (question_of(f) != engine::probe_question::session_crosses_names || f.server.empty())
      continue;
    for (const auto& to : s.targets) {
      const int cport = pm.count(to.port) ? pm.at(to.port) : to.port;
      if (to.sni != f.server) continue;
      if (!f.ports.empty() && std::find(f.ports.begin(), f.ports.end(), cport) == f.ports.end())
        continue;
      const probe::target* from = nullptr;
      for (const auto& t : s.targets)
        if (!from && t.sni != to.sni && t.port == to.port && t.connect_host == to.connect_host &&
            t.connect_port == to.connect_port)
          from = &t;
      if (!from || !done.insert(to.text + "|" + to.sni + "|" + from->sni).second) continue;
      for (const char* proto : {"TLSv1.3", "TLSv1.2"}) {
        const bool is13 = std::string(proto) == "TLSv1.3";
        if ((is13 && !s.po.tls13) || (!is13 && !s.po.tls12)) continue;
        const std::string file =
            scratch.get() + "/crossing-" + std::to_string(crossings.size()) + ".pem";
        crossings.push_back(cross_once(s, *from, to, cport, proto, file));
      }
    }
  }
  return crossings;
}

// "nginx -t warns at FILE:LINE: MESSAGE" (or without the place when unknown).
std::string warning_note(const std::string& who, const sandbox::sandbox_warning& w) {
  return who + " warns" + (w.where.file.empty() ? std::string() : " at " + to_string(w.where)) +
         ": " + w.message;
}

// What the sandbox ran and changed, for the report.
sandbox_summary summarize_sandbox(const session& s) {
  const auto& sb = *s.sb;
  sandbox_summary sum;
  sum.nginx_binary = sb.nginx_binary();
  sum.nginx_version = sb.nginx_version();
  sum.instances = sb.instances();
  sum.workers = sb.workers();
  sum.pid_namespace = sb.pid_namespace();
  sum.reload = s.req.reload || s.swap;
  if (s.swap)
    sum.notes.push_back({"",
                         "started from the --baseline config; sessions taken there were offered "
                         "after a reload into " +
                             s.req.lint.paths.front()});
  for (const auto& k : sb.sockets())
    sum.sockets.push_back(
        {(k.stream ? "stream " : "") + k.original, "127.0.0.1:" + std::to_string(k.port)});
  for (const auto& k : sb.quic_sockets())
    sum.sockets.push_back({"quic " + k.original, "udp 127.0.0.1:" + std::to_string(k.port)});
  for (const auto& n : sb.notes()) sum.notes.push_back({n.server, n.text});
  for (const auto& w : sb.warnings()) sum.notes.push_back({"", warning_note("nginx -t", w)});
  for (const auto& [server, why] : sb.untested()) sum.untested.push_back({server, why});
  return sum;
}

// The judges' options from the sandbox: nginx -t's rejections and warnings, the ports, what
// was not started; nginx -t of the whole config first in the report, its [emerg] and [warn]
// lines evidence for the findings at the lines they name.
void sandbox_evidence(session& s) {
  const auto& sb = *s.sb;
  s.jo.port_map = sb.port_map();
  s.jo.sandbox_responses = true;
  for (const auto& r : sb.rejections()) s.jo.rejected.push_back({r.where, r.message});
  for (const auto& w : sb.warnings()) s.jo.warnings.push_back({w.where, w.port, w.message});
  s.jo.ssl_added_ports = sb.ssl_added_ports();
  s.jo.untested = sb.untested();
  sandbox_summary sum = summarize_sandbox(s);
  const auto& whole = sb.whole_config();
  s.out.nginx_test = nginx_test_summary{sandbox::to_string(whole.result), whole.where,
                                        whole.message, whole.reason};
  for (const auto& n : whole.notes) sum.notes.push_back({"", "whole-config nginx -t: " + n});
  if (whole.result == sandbox::whole_config_test::outcome::rejected)
    s.jo.rejected.push_back({whole.where, whole.message});
  for (const auto& w : whole.warnings) {
    bool seen = false;
    for (const auto& o : sb.warnings()) seen = seen || o.where.same_line(w.where);
    if (seen) continue;
    s.jo.warnings.push_back({w.where, w.port, w.message});
    sum.notes.push_back({"", warning_note("nginx -t (whole config)", w)});
  }
  s.out.sandbox = std::move(sum);
}

// --sandbox: requests through every location that proxies to TLS, counted by the stand-ins.
void measure_upstream_handshakes(session& s) {
  if (!s.sb || s.sb->upstreams().empty()) return;
  step(s, "sending requests through " + std::to_string(s.sb->upstreams().size()) + " TLS upstream" +
              (s.sb->upstreams().size() == 1 ? "" : "s"));
  s.out.upstreams = measure_upstreams(*s.sb, *s.out.lint.models.front());
  s.jo.upstreams = s.out.upstreams;
}

void judge_findings(session& s) {
  step(s, "offering sessions across server names");
  s.jo.crossings = cross_names(s);
  s.jo.several_endpoints = s.req.sandbox ? s.req.instances > 1 : s.dial_count > 1;
  s.jo.session_from_file = s.req.probe.sess_in.has_value() || s.swap;
  s.jo.reload = s.req.reload || s.swap;
  s.jo.quic = s.out.quic_probes;
  if (s.sb)
    for (const auto& k : s.sb->quic_sockets()) s.jo.quic_port_map[k.port] = k.original_port;
  if (s.sb) sandbox_evidence(s);
  auto& findings = s.out.lint.findings.front();
  step(s, "judging the findings");
  s.out.checked = judge(findings, s.out.probes, s.jo);
  engine::context ctx(*s.out.lint.models.front(), s.out.lint.options);
  // What only the probe sees (a staple clients must reject): findings of their own, after the
  // lint findings.
  for (auto& c : probe_findings(ctx, s.out.probes, s.jo.port_map, s.sb != nullptr)) {
    findings.push_back(c.finding);
    s.out.checked.push_back(std::move(c));
  }
}

// --load: what each finding about resumption costs in handshakes per second.
void price_under_load(session& s) {
  if (!s.req.load || !s.sb) return;
  step(s, "pricing the resumption findings under load");
  probe::load_options lo;
  lo.duration_s = s.req.load_duration_s;
  lo.timeout_ms = s.req.probe.timeout_ms;
  lo.stop = s.req.stop;
  if (s.hooks.step)
    lo.on_tick = [&s](const probe::load_tick& t) { s.hooks.step("load: " + probe::tick_text(t)); };
  load_resumption_findings(s.out.checked, s.targets, s.out.probes, s.jo.port_map, lo, s.out.notes,
                           s.hooks.say, s.hooks.interrupt_cause);
  if (!s.out.upstreams.empty()) {
    step(s, "pricing the keepalive fix of the TLS upstreams under load");
    price_upstreams(*s.sb, s.out.upstreams, std::min(s.req.load_duration_s, 10) * 1000,
                    k_upstream_load_connections, s.req.stop);
  }
}

// Which configured key file sealed the live tickets.
void match_ticket_keys(session& s) {
  engine::context ctx(*s.out.lint.models.front(), s.out.lint.options);
  auto keys = configured_keys(ctx);
  // Unreadable key files ran as stand-ins: their key names are the stand-ins'.
  if (s.sb)
    for (auto& k : keys)
      if (k.key_name_hex.empty())
        if (auto it = s.sb->ticket_standins().find(
                std::filesystem::absolute(k.path).lexically_normal().string());
            it != s.sb->ticket_standins().end()) {
          k.key_name_hex = tls::inspect_ticket_key_file(it->second).key_name_hex;
          k.path += " (its sandbox stand-in)";
        }
  // A key file the sandbox nginx rejected was left out there: its sockets use automatic keys.
  std::erase_if(keys, [&](const configured_key& k) {
    for (const auto& r : s.jo.rejected)
      if (r.second.find("\"" + std::filesystem::absolute(k.path).lexically_normal().string() +
                        "\"") != std::string::npos)
        return true;
    return false;
  });
  s.out.key_names = match_key_names(keys, s.out.probes, s.jo.port_map);
}

// A directive nginx rejects that no lint error predicted: nginx would refuse this config,
// which is as serious as an error finding.
void unpredicted_rejections(session& s) {
  auto confirmed_at = [&](const source_location& w, bool column) {
    for (const auto& c : s.out.checked)
      if (c.result == verdict::confirmed &&
          (column ? c.finding.location == w : c.finding.location.same_line(w)))
        return true;
    return false;
  };
  for (const auto& r : s.sb->rejections()) {
    if (confirmed_at(r.where, true)) continue;
    s.out.unpredicted = true;
    s.out.errors.push_back("nginx -t rejects " +
                           (r.where.file.empty() ? std::string("the config") : to_string(r.where)) +
                           " (server " + r.server + "): " + r.message +
                           "; no lint rule predicted it, nginx would not start");
  }
  // The whole config rejected (an error outside the TLS directives, or the one the TLS config
  // showed): nginx would not start.
  const auto& whole = s.sb->whole_config();
  if (whole.result != sandbox::whole_config_test::outcome::rejected) return;
  bool predicted = confirmed_at(whole.where, false);
  // nginx reports what it checks while merging a server (ticket key files, certificates) at
  // the end of the enclosing block, not at the directive: the sandbox's own test, which blames
  // each directive, has the same message and already reports it.
  for (const auto& r : s.sb->rejections())
    predicted = predicted || r.where.same_line(whole.where) || r.message == whole.message;
  if (predicted) return;
  s.out.unpredicted = true;
  s.out.errors.insert(
      s.out.errors.begin(),
      "nginx -t rejects " +
          (whole.where.file.empty() ? std::string("the config") : to_string(whole.where)) + ": " +
          whole.message + "; no lint rule predicted it, nginx would not start");
}

// A probe of a server with ssl_reject_handshake on ends in nginx's unrecognized_name alert: the
// server did what it was configured to do, not a target that could not be probed.
bool refused_as_configured(const session& s, const probe::target_result& r) {
  if (!s.sb || r.error->find("unrecognized name") == std::string::npos) return false;
  for (const auto& k : s.sb->sockets())
    if (r.target == "127.0.0.1:" + std::to_string(k.port) &&
        std::find(k.refusing.begin(), k.refusing.end(), r.sni) != k.refusing.end())
      return true;
  return false;
}

// The notes that say what was not tested, and whether every target answered.
void note_what_was_not_tested(session& s) {
  if (s.names_capped)
    s.out.notes.push_back("probed the first " + std::to_string(s.req.max_names) +
                          " server names only (--max-names)");
  s.out.unreachable = !s.out.sandbox_failure.empty();
  if (s.out.unreachable) {
    s.out.notes.push_back(s.out.sandbox_failure);
    for (auto& c : s.out.checked)
      if (c.result == verdict::not_testable)
        c.reason = "the sandbox did not run: " + s.out.sandbox_failure;
  }
  if (s.sb) unpredicted_rejections(s);
  for (const auto& r : s.out.probes)
    if (r.error && refused_as_configured(s, r)) {
      s.out.notes.push_back(
          r.target + (r.sni.empty() ? " (no SNI)" : " (SNI " + r.sni + ")") +
          " refused the handshake, as its ssl_reject_handshake on asks: " + *r.error);
    } else if (r.error) {
      s.out.unreachable = true;
      s.out.notes.push_back(r.target + (r.sni.empty() ? "" : " (SNI " + r.sni + ")") +
                            " could not be probed: " + *r.error);
    }
  for (const auto& r : s.out.probes)
    if (r.load)
      for (const auto& p : r.load->phases) s.out.unmeasured_phases += probe::unmeasured(p) ? 1 : 0;
}

}  // namespace

void validate(const check_request& a) {
  if (a.sandbox && (!a.endpoints.empty() || !a.connect.empty()))
    throw usage_error("check: --sandbox starts its own nginx: drop --endpoint/--connect");
  if (!a.sandbox && a.endpoints.empty())
    throw usage_error(
        "check: name the live endpoint with --endpoint TARGET, or test before deploy with "
        "--sandbox");
  if (!a.sandbox && (a.instances != 1 || a.reload || !a.nginx.empty()))
    throw usage_error("check: --nginx, --instances and --reload need --sandbox");
  if (a.load && !a.sandbox)
    throw usage_error("check: --load needs --sandbox (a load runs only against the sandbox nginx)");
  if (a.load_duration_s < 1 || a.load_duration_s > probe::max_load_duration_s)
    throw usage_error("check: --duration must be 1.." + std::to_string(probe::max_load_duration_s) +
                      " s");
  if (a.reload && a.probe.sess_in)
    throw usage_error("check: --reload takes its own sessions: drop --sess-in");
}

std::string sandbox_nginx(const std::string& given) {
  const std::string found = sandbox::find_executable(given.empty() ? "nginx" : given);
  if (found.empty())
    throw usage_error(given.empty()
                          ? "check --sandbox: no nginx on PATH or in /usr/sbin (install "
                            "nginx, or pass --nginx BIN)"
                          : "check --sandbox: --nginx " + given + " is not an executable file");
  return found;
}

std::vector<std::string> probe_names(const model::model& m, std::size_t max) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& s : m.servers) {
    if (!s.has_ssl) continue;
    for (const auto& n : s.names) {
      if (config::kind_of_server_name(n) != config::server_name_kind::exact ||
          !config::name_selecting(n))
        continue;
      if (seen.insert(n).second && out.size() < max) out.push_back(n);
    }
  }
  return out;
}

check_run run(const check_request& req, const check_hooks& hooks) {
  validate(req);
  session s{req, hooks, {}, probe_options_of(req), nullptr, {}, 1, false, false, {}};
  auto [isolated, why_not] =
      req.sandbox ? isolate_network() : std::pair<bool, std::string>{false, ""};
  const std::string nginx_bin = req.sandbox ? sandbox_nginx(req.nginx) : "nginx";
  step(s, "linting " + req.lint.paths.front());
  lint_config(s, nginx_bin);
  s.swap = req.sandbox && s.out.lint.baseline_model;
  if (hooks.before_probes) hooks.before_probes();
  if (req.sandbox)
    start_sandbox(s, nginx_bin, isolated, why_not);
  else
    aim_at_endpoints(s);
  probe_targets(s);
  measure_upstream_handshakes(s);
  judge_findings(s);
  price_under_load(s);
  match_ticket_keys(s);
  note_what_was_not_tested(s);
  s.out.interrupted = req.stop && req.load && req.sandbox && req.stop->load();
  if (s.sb) {
    step(s, "stopping nginx");
    s.sb->stop();  // every nginx gone and the run directory removed before the report
  }
  return std::move(s.out);
}

}  // namespace ngxtls::check
