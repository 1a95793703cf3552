// ngxtls check CONFIG --endpoint TARGET | --sandbox: lint, probe every server name the config
// serves (live, or in a throwaway nginx), and mark each finding confirmed, refuted or not testable.

#include "check/check.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "base/error.hpp"
#include "cli/check_load.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/interrupt.hpp"
#include "engine/engine.hpp"
#include "engine/pipeline.hpp"
#include "model/model.hpp"
#include "probe/load.hpp"
#include "probe/prober.hpp"
#include "probe/target.hpp"
#include "report/check_output.hpp"
#include "report/format.hpp"
#include "sandbox/sandbox.hpp"
#include "tls/ticket_key.hpp"

namespace ngxtls::cli {

namespace {

struct check_args {
  std::string config;
  std::string color = "auto";  ///< --color
  std::vector<std::string> endpoints;
  std::vector<std::string> connect;
  bool sandbox = false;
  std::string nginx;
  int instances = 1;
  bool reload = false;
  std::string conf_prefix, nginx_version, openssl_version;
  std::string format = "text";
  std::string output;
  std::string fail_on = "warning";
  std::vector<std::string> select, ignore;
  std::string config_file;
  std::string baseline;
  bool strict_files = false;
  std::optional<config::implied_context> site_context;  ///< --context
  // The prober's defaults (probe_options), the only place they are set.
  int attempts = probe::probe_options{}.attempts, per_target = probe::probe_options{}.per_target,
      timeout_ms = probe::probe_options{}.timeout_ms;
  bool only12 = false, only13 = false, no_ocsp = false;
  std::string sess_in;
  int max_names = 16;
  // --load (with --sandbox): the load phases per finding about resumption.
  bool load = false;
  int load_duration_s = probe::load_options{}.duration_s;
};

// Server names worth an SNI probe: literal names of ssl servers (no wildcard, regex or "_").
std::vector<std::string> probe_names(const model::model& m, std::size_t max) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& s : m.servers) {
    if (!s.has_ssl) continue;
    for (const auto& n : s.names) {
      if (n.empty() || n == "_" || n[0] == '~' || n.find('*') != std::string::npos) continue;
      if (seen.insert(n).second && out.size() < max) out.push_back(n);
    }
  }
  return out;
}

int run_check(const check_args& a) {
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
  if (a.reload && !a.sess_in.empty())
    throw usage_error("check: --reload takes its own sessions: drop --sess-in");
  // Before any thread exists (the namespace is per thread; later threads inherit it): ngxtls,
  // the sandbox nginx and the prober then share a loopback-only network, and nothing the
  // config names can reach another host. NGXTLS_SANDBOX_NO_NETNS=1 skips it (tests of the
  // path taken without root).
  bool network_isolated = false;
  std::string no_namespace_reason;
  if (a.sandbox) {
    const char* no_netns = std::getenv("NGXTLS_SANDBOX_NO_NETNS");
    if (no_netns && *no_netns && std::string(no_netns) != "0")
      no_namespace_reason = "NGXTLS_SANDBOX_NO_NETNS is set";
    else
      network_isolated = sandbox::enter_loopback_network_namespace(no_namespace_reason);
  }
  std::string nginx_bin = "nginx";
  if (a.sandbox) {
    nginx_bin = sandbox::find_executable(a.nginx.empty() ? "nginx" : a.nginx);
    if (nginx_bin.empty())
      throw usage_error(a.nginx.empty()
                            ? "check --sandbox: no nginx on PATH or in /usr/sbin (install nginx, "
                              "or pass --nginx BIN)"
                            : "check --sandbox: --nginx " + a.nginx + " is not an executable file");
  }
  // lint's pipeline, with lint's settings: the .ngxtls.toml (--config), the flags, the versions.
  engine::lint_request req;
  req.command = "check";
  req.paths = {a.config};
  req.project_config_path = a.config_file;
  req.conf_prefix = a.conf_prefix;
  req.nginx_version = a.nginx_version;
  req.openssl_version = a.openssl_version;
  req.select = a.select;
  req.ignore = a.ignore;
  req.baseline = a.baseline;
  req.strict_files = a.strict_files;
  req.site_context = a.site_context;
  // Read whole, not mapped: the sandbox renders from the tree long after the parse, and a mapped
  // file edited meanwhile would mix two versions.
  engine::lint_hooks hooks = lint_hooks(nginx_bin);
  hooks.after_load = [&](const engine::lint_run& run) {
    refuse_output_over_config(a.output, {run.configs.front().get(), run.baseline_config.get()});
  };
  engine::lint_run run = engine::lint(req, engine::all_rules(), hooks);
  report::check_report rep;
  if (run.project) rep.lint.project_config = run.project->path;
  rep.lint.assumed = run.assumed;
  rep.lint.inputs = run.inputs;
  rep.lint.notice = std::move(run.notice);
  rep.lint.dropped_findings = run.dropped_per_rule;
  report::note_reading(rep.lint, run.inputs.front(), *run.configs.front(), *run.models.front());
  const engine::lint_options& opts = run.options;
  const std::unique_ptr<model::model>& m = run.models.front();
  const std::unique_ptr<model::model>& base_model = run.baseline_model;
  std::vector<engine::finding>& findings = run.findings.front();

  // With --load, Ctrl-C stops the probes and the load at once and the partial report is
  // written (a second Ctrl-C ends the process; the sandbox's keeper still cleans up).
  std::optional<interrupt_guard> guard;
  if (a.load && a.sandbox) guard.emplace();
  auto interrupted = [&] { return guard && interrupt_guard::flag().load(); };
  probe::probe_options po;
  if (guard) po.stop = &interrupt_guard::flag();
  po.attempts = a.attempts;
  po.per_target = a.per_target;
  po.timeout_ms = a.timeout_ms;
  po.ocsp = !a.no_ocsp;
  if (a.only12 != a.only13) {
    po.tls12 = a.only12;
    po.tls13 = a.only13;
  }
  if (!a.sess_in.empty()) po.sess_in = a.sess_in;
  // 0-RTT is a write to the server: only against the sandbox's own nginx.
  po.early_data = a.sandbox;

  std::vector<probe::target> targets;
  std::vector<std::string> names;
  std::unique_ptr<sandbox::sandbox> sb;
  std::size_t dial_count = 1;
  bool names_capped = false;
  std::string sandbox_failure;
  // With --sandbox, --baseline means: start from the baseline config, take sessions, switch to
  // the new config with a reload, offer them (a key rotation tried before it is deployed).
  const bool swap = a.sandbox && base_model;
  auto sandbox_targets = [&] {
    std::vector<probe::target> out;
    for (const auto& s : sb->sockets())
      for (const auto& n : s.names) {
        if (out.size() >= static_cast<std::size_t>(a.max_names)) {
          names_capped = true;
          return out;
        }
        const std::string addr = "127.0.0.1:" + std::to_string(s.port);
        out.push_back(n.empty() ? probe::parse_target(addr) : probe::parse_target(addr, n));
      }
    return out;
  };
  if (a.sandbox) {
    sandbox::sandbox_options so;
    so.nginx_binary = nginx_bin;
    so.instances = a.instances;
    so.network_isolated = network_isolated;
    so.no_namespace_reason = no_namespace_reason;
    try {
      sb = std::make_unique<sandbox::sandbox>(swap ? *base_model : *m, so);
      targets = sandbox_targets();
    } catch (const target_error& e) {
      // The lint report still stands: print it with every verdict not testable.
      sandbox_failure = e.what();
    }
  } else {
    // One probe target per endpoint (or backend) and server name.
    names = probe_names(*m, static_cast<std::size_t>(a.max_names));
    names_capped = names.size() == static_cast<std::size_t>(a.max_names);
    std::vector<std::optional<std::string>> dials;
    if (a.connect.empty()) dials.push_back(std::nullopt);
    for (const auto& c : a.connect) dials.push_back(c);
    dial_count = a.endpoints.size() * dials.size();
    for (const auto& e : a.endpoints)
      for (const auto& d : dials) {
        if (names.empty()) targets.push_back(probe::parse_target(e, std::nullopt, d));
        for (const auto& n : names) targets.push_back(probe::parse_target(e, n, d));
      }
  }

  if (sb && (a.reload || swap)) {
    // Take a session per target, reload every master (into the new config with --baseline),
    // then offer it again (docs/nginx-facts.md#ticket-keys-per-instance; ticket key rotation).
    std::map<std::string, std::string> saved;  // "port SNI" -> session file
    auto key = [](const probe::target& t) { return std::to_string(t.port) + " " + t.sni; };
    for (std::size_t i = 0; i < targets.size(); ++i) {
      auto p1 = po;
      p1.sess_out = sb->run_dir() + "/session-" + std::to_string(i) + ".pem";
      try {
        auto r = probe::run_probe({targets[i]}, p1);
        if (!r.empty() && !r.front().error) saved[key(targets[i])] = *p1.sess_out;
      } catch (const target_error& e) {
        rep.notes.push_back(targets[i].text +
                            " gave no session to save before the reload: " + e.what());
      }
    }
    if (swap) {
      sb->reload_into(*m);
      targets = sandbox_targets();
    } else {
      sb->reload();
    }
    for (const auto& t : targets) {
      auto p2 = po;
      if (auto it = saved.find(key(t)); it != saved.end()) p2.sess_in = it->second;
      auto r = probe::run_probe({t}, p2);
      rep.probes.insert(rep.probes.end(), r.begin(), r.end());
    }
  } else if (!targets.empty()) {
    rep.probes = probe::run_probe(targets, po);
  }

  // Sessions across names (cross-server-resumption): per finding, a session taken under
  // another name of its socket, offered under the finding's server name, per protocol.
  std::vector<check::session_crossing> crossings;
  {
    const std::map<int, int> pm = sb ? sb->port_map() : std::map<int, int>{};
    std::string scratch;  // private directory for the session files
    std::set<std::string> done;
    for (const auto& f : findings) {
      if (check::question_of(f) != engine::probe_question::session_crosses_names ||
          f.server.empty())
        continue;
      for (const auto& to : targets) {
        const int cport = pm.count(to.port) ? pm.at(to.port) : to.port;
        if (to.sni != f.server) continue;
        if (!f.ports.empty() && std::find(f.ports.begin(), f.ports.end(), cport) == f.ports.end())
          continue;
        const probe::target* from = nullptr;
        for (const auto& t : targets)
          if (!from && t.sni != to.sni && t.port == to.port && t.connect_host == to.connect_host &&
              t.connect_port == to.connect_port)
            from = &t;
        if (!from || !done.insert(to.text + "|" + to.sni + "|" + from->sni).second) continue;
        if (scratch.empty()) {
          if (sb) {
            scratch = sb->run_dir();
          } else {
            std::string tmpl =
                (std::filesystem::temp_directory_path() / "ngxtls-check-XXXXXX").string();
            if (!::mkdtemp(tmpl.data()))
              throw target_error("check: cannot create a temporary directory");
            scratch = tmpl;
          }
        }
        for (const char* proto : {"TLSv1.3", "TLSv1.2"}) {
          const bool is13 = std::string(proto) == "TLSv1.3";
          if ((is13 && !po.tls13) || (!is13 && !po.tls12)) continue;
          check::session_crossing x;
          x.from_sni = from->sni;
          x.to_sni = to.sni;
          x.port = cport;
          x.target = to.connect_host + ":" + std::to_string(to.connect_port);
          x.protocol = proto;
          auto p1 = po;
          p1.tls13 = is13;
          p1.tls12 = !is13;
          p1.attempts = 1;
          p1.ocsp = false;
          p1.sess_in.reset();
          p1.sess_out = scratch + "/crossing-" + std::to_string(crossings.size()) + ".pem";
          try {
            auto r1 = probe::run_probe({*from}, p1);
            x.taken = !r1.empty() && !r1.front().error;
          } catch (const target_error& e) {
            x.failure = e.what();
          }
          if (x.taken) {
            auto p2 = p1;
            p2.sess_out.reset();
            p2.sess_in = *p1.sess_out;
            p2.attempts = std::min(a.attempts, 10);
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
            std::filesystem::remove(*p1.sess_out, ec);
          }
          crossings.push_back(std::move(x));
        }
      }
    }
    if (!sb && !scratch.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(scratch, ec);
    }
  }

  check::judge_options jo;
  jo.crossings = crossings;
  jo.several_endpoints = a.sandbox ? a.instances > 1 : dial_count > 1;
  jo.session_from_file = !a.sess_in.empty() || swap;
  jo.reload = a.reload || swap;
  if (sb) {
    jo.port_map = sb->port_map();
    jo.sandbox_responses = true;
    for (const auto& r : sb->rejections()) jo.rejected.push_back({r.where, r.message});
    for (const auto& w : sb->warnings()) jo.warnings.push_back({w.where, w.port, w.message});
    jo.ssl_added_ports = sb->ssl_added_ports();
    jo.untested = sb->untested();
    report::sandbox_summary sum;
    sum.nginx_binary = sb->nginx_binary();
    sum.nginx_version = sb->nginx_version();
    sum.instances = sb->instances();
    sum.workers = sb->workers();
    sum.pid_namespace = sb->pid_namespace();
    sum.reload = a.reload || swap;
    if (swap)
      sum.notes.insert(sum.notes.begin(), {"",
                                           "started from the --baseline config; sessions taken "
                                           "there were offered after a reload into " +
                                               a.config});
    for (const auto& s : sb->sockets())
      sum.sockets.push_back(
          {(s.stream ? "stream " : "") + s.original, "127.0.0.1:" + std::to_string(s.port)});
    for (const auto& n : sb->notes()) sum.notes.push_back({n.server, n.text});
    for (const auto& w : sb->warnings())
      sum.notes.push_back(
          {"", "nginx -t warns" +
                   (w.where.file.empty() ? std::string() : " at " + to_string(w.where)) + ": " +
                   w.message});
    for (const auto& [server, why] : sb->untested()) sum.untested.push_back({server, why});
    // nginx -t of the whole config: its verdict first in the report, its [emerg] and [warn]
    // lines as evidence for the findings at the lines they name.
    const auto& whole = sb->whole_config();
    rep.nginx_test = report::nginx_test_summary{sandbox::to_string(whole.result), whole.where,
                                                whole.message, whole.reason};
    for (const auto& n : whole.notes) sum.notes.push_back({"", "whole-config nginx -t: " + n});
    if (whole.result == sandbox::whole_config_test::outcome::rejected)
      jo.rejected.push_back({whole.where, whole.message});
    for (const auto& w : whole.warnings) {
      bool seen = false;
      for (const auto& o : sb->warnings())
        seen = seen || (o.where.file == w.where.file && o.where.line == w.where.line);
      if (seen) continue;
      jo.warnings.push_back({w.where, w.port, w.message});
      sum.notes.push_back(
          {"", "nginx -t (whole config) warns" +
                   (w.where.file.empty() ? std::string() : " at " + to_string(w.where)) + ": " +
                   w.message});
    }
    rep.sandbox = sum;
  }
  rep.checked = check::judge(findings, rep.probes, jo);
  rep.lint.findings = findings;
  engine::context ctx(*m, opts);
  // What only the probe sees (a staple clients must reject): findings of their own, after the
  // lint findings.
  for (auto& c : check::probe_findings(ctx, rep.probes, jo.port_map, sb != nullptr)) {
    rep.lint.findings.push_back(c.finding);
    rep.checked.push_back(std::move(c));
  }
  if (a.load && sb) {
    probe::load_options lo;
    lo.duration_s = a.load_duration_s;
    lo.timeout_ms = a.timeout_ms;
    lo.stop = &interrupt_guard::flag();
    load_resumption_findings(rep.checked, targets, rep.probes, jo.port_map, lo, rep.notes);
  }
  auto keys = check::configured_keys(ctx);
  // Unreadable key files ran as stand-ins: their key names are the stand-ins'.
  if (sb)
    for (auto& k : keys)
      if (k.key_name_hex.empty())
        if (auto it = sb->ticket_standins().find(
                std::filesystem::absolute(k.path).lexically_normal().string());
            it != sb->ticket_standins().end()) {
          k.key_name_hex = tls::inspect_ticket_key_file(it->second).key_name_hex;
          k.path += " (its sandbox stand-in)";
        }
  // A key file the sandbox nginx rejected was left out there: its sockets use automatic keys.
  std::erase_if(keys, [&](const check::configured_key& k) {
    for (const auto& r : jo.rejected)
      if (r.second.find("\"" + std::filesystem::absolute(k.path).lexically_normal().string() +
                        "\"") != std::string::npos)
        return true;
    return false;
  });
  rep.key_names = check::match_key_names(keys, rep.probes, jo.port_map);
  if (names_capped)
    rep.notes.push_back("probed the first " + std::to_string(a.max_names) +
                        " server names only (--max-names)");
  bool unreachable = !sandbox_failure.empty();
  if (unreachable) {
    rep.notes.push_back(sandbox_failure);
    for (auto& c : rep.checked)
      if (c.result == check::verdict::not_testable)
        c.reason = "the sandbox did not run: " + sandbox_failure;
  }
  // A directive nginx rejects that no lint error predicted: nginx would refuse this config,
  // which is as serious as an error finding.
  bool unpredicted = false;
  if (sb)
    for (const auto& r : sb->rejections()) {
      bool predicted = false;
      for (const auto& c : rep.checked)
        if (c.result == check::verdict::confirmed && c.finding.location.file == r.where.file &&
            c.finding.location.line == r.where.line && c.finding.location.column == r.where.column)
          predicted = true;
      if (predicted) continue;
      unpredicted = true;
      rep.errors.push_back("nginx -t rejects " +
                           (r.where.file.empty() ? std::string("the config") : to_string(r.where)) +
                           " (server " + r.server + "): " + r.message +
                           "; no lint rule predicted it, nginx would not start");
    }
  // The whole config rejected (an error outside the TLS directives, or the one the TLS config
  // showed): nginx would not start.
  if (sb && sb->whole_config().result == sandbox::whole_config_test::outcome::rejected) {
    const auto& w = sb->whole_config().where;
    bool predicted = false;
    for (const auto& c : rep.checked)
      predicted =
          predicted || (c.result == check::verdict::confirmed &&
                        c.finding.location.file == w.file && c.finding.location.line == w.line);
    // nginx reports what it checks while merging a server (ticket key files, certificates) at
    // the end of the enclosing block, not at the directive: the sandbox's own test, which
    // blames each directive, has the same message and already reports it.
    for (const auto& r : sb->rejections())
      predicted = predicted || (r.where.file == w.file && r.where.line == w.line) ||
                  r.message == sb->whole_config().message;
    if (!predicted) {
      unpredicted = true;
      rep.errors.insert(
          rep.errors.begin(),
          "nginx -t rejects " + (w.file.empty() ? std::string("the config") : to_string(w)) + ": " +
              sb->whole_config().message + "; no lint rule predicted it, nginx would not start");
    }
  }
  // A probe of a server with ssl_reject_handshake on ends in nginx's unrecognized_name alert:
  // the server did what it was configured to do, not a target that could not be probed.
  auto refused_as_configured = [&](const probe::target_result& r) {
    if (!sb || r.error->find("unrecognized name") == std::string::npos) return false;
    for (const auto& s : sb->sockets())
      if (r.target == "127.0.0.1:" + std::to_string(s.port) &&
          std::find(s.refusing.begin(), s.refusing.end(), r.sni) != s.refusing.end())
        return true;
    return false;
  };
  for (const auto& r : rep.probes)
    if (r.error && refused_as_configured(r)) {
      rep.notes.push_back(
          r.target + (r.sni.empty() ? " (no SNI)" : " (SNI " + r.sni + ")") +
          " refused the handshake, as its ssl_reject_handshake on asks: " + *r.error);
    } else if (r.error) {
      unreachable = true;
      rep.notes.push_back(r.target + (r.sni.empty() ? "" : " (SNI " + r.sni + ")") +
                          " could not be probed: " + *r.error);
    }

  if (sb) sb->stop();  // every nginx gone and the run directory removed before the report goes out
  report::output_context out;
  out.color = use_color(a.color, 1, !a.output.empty() && a.output != "-");
  out.working_dir = project_root("");
  const auto& format = report::format_for(report::command::check, a.format);
  write_output(a.output, [&](std::ostream& os) { format.check(rep, out, os); });
  if (interrupted()) {
    std::cerr << "ngxtls: interrupted: the report is partial\n";
    return exit_interrupted;
  }
  if (unreachable) {
    // The report holds the reasons; stderr says why the exit code is 3.
    // The sandbox's failure may quote nginx, which quotes the config.
    say_on_stderr(
        (sandbox_failure.empty() ? std::string("a target could not be probed") : sandbox_failure) +
        " (exit 3; see the report's notes)");
    return exit_target;
  }
  int unmeasured = 0;
  for (const auto& r : rep.probes)
    if (r.load)
      for (const auto& p : r.load->phases) unmeasured += probe::unmeasured(p) ? 1 : 0;
  if (unmeasured > 0) {
    std::cerr << "ngxtls: " << unmeasured << (unmeasured == 1 ? " load phase" : " load phases")
              << " could not be measured (exit 3; see the report)\n";
    return exit_target;
  }
  if (a.fail_on == "never") return exit_ok;
  if (unpredicted) return exit_findings;
  auto threshold = engine::parse_severity(a.fail_on).value_or(engine::severity::warning);
  // Refuted findings are reported but do not fail the run.
  for (const auto& c : rep.checked)
    if (c.result != check::verdict::refuted &&
        static_cast<int>(c.finding.level) <= static_cast<int>(threshold))
      return exit_findings;
  return exit_ok;
}

}  // namespace

void register_check(CLI::App& app, std::function<int()>& run) {
  auto a = std::make_shared<check_args>();
  auto* sub = app.add_subcommand(
      "check",
      "Lint a config and confirm or refute each finding on a live endpoint or a sandbox nginx");
  sub->add_option("config", a->config, "nginx.conf, a saved `nginx -T` dump, or - for stdin")
      ->required();
  sub->add_option("--endpoint", a->endpoints,
                  "live TARGET serving this config (host[:port]); repeat for several instances");
  sub->add_option("--connect", a->connect,
                  "dial this backend address instead, sending the config's server names as SNI");
  sub->add_flag("--sandbox", a->sandbox,
                "before deploy: run this config's TLS servers in a throwaway nginx on loopback (as "
                "root: nginx runs as "
                "an unused uid in a loopback-only network namespace, with no module or Lua the "
                "config names; see "
                "docs/user-guide.md); the probe then also sends TLS 1.3 early data (HEAD /, no "
                "body) and replays it, to judge early-data-replay");
  sub->add_option("--nginx", a->nginx,
                  "--sandbox: the nginx binary (default: nginx on PATH, else /usr/sbin/nginx)");
  sub->add_option("--instances", a->instances,
                  "--sandbox: masters on each port with reuseport, standing for N hosts")
      ->check(CLI::Range(1, 16));
  sub->add_flag("--load", a->load,
                "--sandbox: per finding about resumption, measure handshake capacity at the "
                "measured resumption rate and at full resumption (a load on the sandbox nginx)");
  sub->add_option("--duration", a->load_duration_s,
                  "--load: seconds per load phase (default " +
                      std::to_string(probe::load_options{}.duration_s) + ")");
  sub->add_flag("--reload", a->reload,
                "--sandbox: reload nginx between taking a session and offering it");
  sub->add_option("--conf-prefix", a->conf_prefix, "nginx's conf prefix");
  add_version_options(sub, a->nginx_version, a->openssl_version, "nginx version to assume",
                      "OpenSSL version to assume");
  sub->add_option("--format", a->format, "output format")
      ->check(CLI::IsMember(report::format_names(report::command::check)));
  sub->add_option("-o,--output", a->output, "write the report to FILE");
  sub->add_option("--fail-on", a->fail_on,
                  "exit 1 on findings (not refuted) at or above this severity")
      ->check(CLI::IsMember({"error", "warning", "note", "never"}));
  add_rule_selection(sub, a->select, a->ignore);
  add_color_option(sub, a->color);
  sub->add_option("--config", a->config_file, ".ngxtls.toml to use (default: found in . or above)");
  sub->add_option("--baseline", a->baseline,
                  "the config deployed before this one (with --sandbox: run it first, then reload "
                  "into CONFIG)");
  sub->add_flag("--strict-files", a->strict_files, "missing certificate and key files are errors");
  add_context_option(sub, a->site_context);
  sub->add_option("-n", a->attempts, "resumption attempts per protocol")
      ->check(CLI::Range(1, 10000));
  sub->add_option("-c", a->per_target, "connections in flight per target")
      ->check(CLI::Range(1, 256));
  sub->add_option("--timeout", a->timeout_ms, "per-connection timeout, ms")
      ->check(CLI::Range(1, 600000));
  sub->add_flag("--tls1.2", a->only12, "probe TLS 1.2 only");
  sub->add_flag("--tls1.3", a->only13, "probe TLS 1.3 only");
  sub->add_flag("--no-ocsp", a->no_ocsp, "do not ask for OCSP staples");
  sub->add_option("--sess-in", a->sess_in,
                  "offer this saved session (PEM, as openssl s_client -sess_out writes)");
  sub->add_option("--max-names", a->max_names, "server names to probe at most")
      ->check(CLI::Range(1, 4096));
  sub->callback([a, &run] { run = [a] { return run_check(*a); }; });
}

}  // namespace ngxtls::cli
