// ngxtls check CONFIG --endpoint TARGET | --sandbox: lint, probe every server name the config
// serves (live, or in a throwaway nginx), and mark each finding confirmed, refuted or not testable.

#include <iostream>
#include <memory>
#include <optional>

#include "base/error.hpp"
#include "check/workflow.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/interrupt.hpp"
#include "engine/pipeline.hpp"
#include "probe/load.hpp"
#include "probe/prober.hpp"
#include "report/check_output.hpp"
#include "report/format.hpp"

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

// The report of a check run, for the report writers.
report::check_report report_of(check::check_run& run) {
  report::check_report rep;
  if (run.lint.project) rep.lint.project_config = run.lint.project->path;
  rep.lint.assumed = run.lint.assumed;
  rep.lint.inputs = run.lint.inputs;
  rep.lint.notice = std::move(run.lint.notice);
  rep.lint.dropped_findings = run.lint.dropped_per_rule;
  report::note_reading(rep.lint, run.lint.inputs.front(), *run.lint.configs.front(),
                       *run.lint.models.front());
  rep.lint.findings = std::move(run.lint.findings.front());
  rep.checked = std::move(run.checked);
  rep.probes = std::move(run.probes);
  rep.key_names = std::move(run.key_names);
  rep.notes = std::move(run.notes);
  rep.errors = std::move(run.errors);
  rep.sandbox = std::move(run.sandbox);
  rep.upstreams = std::move(run.upstreams);
  rep.quic_probes = std::move(run.quic_probes);
  rep.nginx_test = std::move(run.nginx_test);
  return rep;
}

// The exit code (docs/exit-codes.md), with stderr's line saying why when it is not 0 or 1.
int exit_code_of(const check::check_run& run, const report::check_report& rep,
                 const std::string& fail_on) {
  if (run.interrupted) {
    std::cerr << "ngxtls: interrupted (" << interrupt_guard::cause()
              << "): the report is partial\n";
    return interrupt_guard::exit_code();
  }
  if (run.unreachable) {
    // The report holds the reasons; stderr says why the exit code is 3.
    // The sandbox's failure may quote nginx, which quotes the config.
    say_on_stderr((run.sandbox_failure.empty() ? std::string("a target could not be probed")
                                               : run.sandbox_failure) +
                  " (exit 3; see the report's notes)");
    return exit_target;
  }
  if (run.unmeasured_phases > 0) {
    std::cerr << "ngxtls: " << run.unmeasured_phases
              << (run.unmeasured_phases == 1 ? " load phase" : " load phases")
              << " could not be measured (exit 3; see the report)\n";
    return exit_target;
  }
  if (fail_on == "never") return exit_ok;
  if (run.unpredicted) return exit_findings;
  auto threshold = engine::parse_severity(fail_on).value_or(engine::severity::warning);
  // Refuted findings are reported but do not fail the run.
  for (const auto& c : rep.checked)
    if (c.result != check::verdict::refuted &&
        static_cast<int>(c.finding.level) <= static_cast<int>(threshold))
      return exit_findings;
  return exit_ok;
}

check::check_request request_of(const check_args& a) {
  check::check_request req;
  req.lint.command = "check";
  req.lint.paths = {a.config};
  req.lint.project_config_path = a.config_file;
  req.lint.conf_prefix = a.conf_prefix;
  req.lint.nginx_version = a.nginx_version;
  req.lint.openssl_version = a.openssl_version;
  req.lint.select = a.select;
  req.lint.ignore = a.ignore;
  req.lint.baseline = a.baseline;
  req.lint.strict_files = a.strict_files;
  req.lint.site_context = a.site_context;
  req.endpoints = a.endpoints;
  req.connect = a.connect;
  req.sandbox = a.sandbox;
  req.nginx = a.nginx;
  req.instances = a.instances;
  req.reload = a.reload;
  req.probe.attempts = a.attempts;
  req.probe.per_target = a.per_target;
  req.probe.timeout_ms = a.timeout_ms;
  req.probe.ocsp = !a.no_ocsp;
  if (a.only12 != a.only13) {
    req.probe.tls12 = a.only12;
    req.probe.tls13 = a.only13;
  }
  if (!a.sess_in.empty()) req.probe.sess_in = a.sess_in;
  // 0-RTT is a write to the server: only against the sandbox's own nginx.
  req.probe.early_data = a.sandbox;
  req.max_names = a.max_names;
  req.load = a.load;
  req.load_duration_s = a.load_duration_s;
  if (a.load && a.sandbox) req.stop = &interrupt_guard::flag();
  return req;
}

int run_check(const check_args& a) {
  const check::check_request req = request_of(a);
  check::validate(req);
  // With --load, Ctrl-C stops the probes and the load at once and the partial report is
  // written (a second Ctrl-C ends the process; the sandbox's keeper still cleans up).
  std::optional<interrupt_guard> guard;
  check::check_hooks hooks;
  hooks.lint_hooks = [&](const std::string& nginx_bin) {
    engine::lint_hooks h = lint_hooks(nginx_bin);
    h.after_load = [&](const engine::lint_run& run) {
      refuse_output_over_config(a.output, {run.configs.front().get(), run.baseline_config.get()});
    };
    return h;
  };
  hooks.before_probes = [&] {
    if (req.stop) guard.emplace();
  };
  // On a terminal, the step the check is at, redrawn in place (at most 4 times a second while
  // it counts) and erased before any other stderr line and at the end.
  status_line live;
  hooks.say = [&live](const std::string& line) {
    live.clear();
    say_on_stderr(line);
  };
  // A new step is drawn at once; a step's own count ("...: 2 done", "...: 3 s left") at most
  // every 200 ms.
  std::string shown_step;
  if (live.on())
    hooks.step = [&live, &shown_step](const std::string& what) {
      const std::string step = what.substr(0, what.rfind(": "));
      live.show("check: " + what, step == shown_step ? 200 : 0);
      shown_step = step;
    };
  hooks.interrupt_cause = [] { return std::string(interrupt_guard::cause()); };
  check::check_run run = check::run(req, hooks);
  live.clear();
  const report::check_report rep = report_of(run);
  report::output_context ctx;
  ctx.color = use_color(a.color, 1, !a.output.empty() && a.output != "-");
  ctx.working_dir = project_root("");
  const auto& format = report::format_for(report::command::check, a.format);
  write_output(a.output, [&](std::ostream& os) { format.check(rep, ctx, os); });
  return exit_code_of(run, rep, a.fail_on);
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
