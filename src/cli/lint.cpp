// ngxtls lint: parse, model, rules, report.

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "base/error.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "config/site_files.hpp"
#include "engine/engine.hpp"
#include "engine/fix.hpp"
#include "engine/pipeline.hpp"
#include "model/model.hpp"
#include "report/baseline_report.hpp"
#include "report/fingerprint.hpp"
#include "report/format.hpp"
#include "report/lint_output.hpp"
#include "report/terminal_text.hpp"

// Address sanitizer builds (g++ defines __SANITIZE_ADDRESS__, clang answers __has_feature).
#if defined(__SANITIZE_ADDRESS__)
#define NGXTLS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NGXTLS_ASAN 1
#endif
#endif
#ifndef NGXTLS_ASAN
#define NGXTLS_ASAN 0
#endif

namespace ngxtls::cli {

namespace {

struct lint_args {
  std::vector<std::string> paths;
  std::string conf_prefix;
  std::string nginx_version, openssl_version;
  bool fleet = false;
  std::string format = "text";
  std::string output;
  std::string fail_on = "warning";
  std::vector<std::string> select, ignore;
  std::string config_file;
  std::string baseline;
  std::string baseline_report;  ///< --baseline-report: a previous SARIF or JSON report
  std::string project_root;     ///< --project-root
  bool strict_files = false;
  std::optional<config::implied_context> site_context;  ///< --context
  bool fix = false;                                     ///< --fix given
  std::string fix_mode;                                 ///< "" (print the diff) or "write"
  std::string color = "auto";                           ///< --color
};

engine::lint_request request_of(const lint_args& a) {
  engine::lint_request req;
  req.paths = a.paths;
  req.fleet = a.fleet;
  req.project_config_path = a.config_file;
  req.conf_prefix = a.conf_prefix;
  req.nginx_version = a.nginx_version;
  req.openssl_version = a.openssl_version;
  req.select = a.select;
  req.ignore = a.ignore;
  refuse_report_as_config_baseline(a.baseline);
  req.baseline = a.baseline;
  req.strict_files = a.strict_files;
  req.site_context = a.site_context;
  return req;
}

// 1 when a finding is at or above --fail-on, else 0.
int exit_code_of(const report::lint_report& rep, const std::string& fail_on) {
  if (fail_on == "never") return exit_ok;
  auto threshold = engine::parse_severity(fail_on).value_or(engine::severity::warning);
  for (const auto& f : rep.findings)
    if (static_cast<int>(f.level) <= static_cast<int>(threshold)) return exit_findings;
  return exit_ok;
}

// lint's pipeline hooks: refuse a --fix=write into a dump and an output over a config file,
// and with `progress` a count on stderr.
engine::lint_hooks hooks_of(const lint_args& a, bool fix_write, bool progress) {
  engine::lint_hooks hooks = lint_hooks();
  hooks.after_load = [fix_write, output = a.output](const engine::lint_run& run) {
    // A dump's files are the dumped host's (and its text may not be what is at those paths
    // here): writing fixes to them would replace files on this machine with the dump's text.
    if (fix_write)
      for (std::size_t i = 0; i < run.configs.size(); ++i)
        if (run.configs[i]->from_dump)
          throw usage_error("lint: --fix=write cannot write into an nginx -T dump (" +
                            run.inputs[i] +
                            "): its files are the dumped host's; use --fix to print a diff");
    std::vector<const config::config*> read{run.baseline_config.get()};
    for (const auto& c : run.configs) read.push_back(c.get());
    refuse_output_over_config(output, read);
  };
  // A count on stderr while many inputs are read and linted, only on a terminal: redrawn in
  // place, erased at the end (run_lint).
  if (progress)
    hooks.progress = [](const char* step, std::size_t done, std::size_t total) {
      std::cerr << "\r\x1b[Kngxtls: " << step << ' ' << done << '/' << total << " inputs"
                << std::flush;
    };
  return hooks;
}

// The fingerprint of every place of every finding, and --baseline-report's suppression of
// the places a previous report holds.
void mark_known_places(report::lint_report& rep, const engine::lint_run& run, const lint_args& a) {
  rep.project_root = project_root(a.project_root);
  {
    // Left to the process's exit like the findings (run_lint): its 100,000s of place strings
    // took a tenth of a second to free.
#if NGXTLS_ASAN
    auto held = std::make_unique<report::place_index>();
    report::place_index& places = *held;
#else
    report::place_index& places = *new report::place_index;
#endif
    for (const auto& f : rep.findings) {
      places.want(f.location);
      for (const auto& at : f.also_at) places.want(at);
    }
    for (const auto& c : run.configs) places.add(*c);
    rep.fingerprints = report::fingerprints(rep.findings, places, rep.project_root);
  }
  if (!a.baseline_report.empty()) {
    const auto known = report::read_baseline_report(a.baseline_report);
    rep.baseline_report = a.baseline_report;
    rep.baseline_suppressed = report::apply_baseline(rep, known);
    say_on_stderr(std::to_string(rep.baseline_suppressed) +
                  (rep.baseline_suppressed == 1 ? " finding" : " findings") +
                  " suppressed by --baseline-report " + a.baseline_report +
                  " (already in that report)");
  }
}

// --fix on one config's findings: its diff added to `diff`, its files written back with
// --fix=write; the findings left without a fix stay in `found`. The number of findings fixed.
std::size_t fix_findings(const config::config& cfg, std::vector<engine::finding>& found,
                         const lint_args& a, std::string& diff) {
  // The diff is the output; findings without a mechanical fix still decide the exit code.
  auto result = engine::apply_fixes(cfg, found);
  diff += result.diff;
  for (const auto& c : result.conflicts)
    std::cerr << "ngxtls: not fixed (overlaps another fix): " << report::terminal_safe(c) << '\n';
  for (const auto& c : result.refused)
    std::cerr << "ngxtls: not fixed: " << report::terminal_safe(c) << '\n';
  if (a.fix_mode == "write") {
    for (const auto& [path, text] : result.files) {
      if (path == "<stdin>" || cfg.files.empty())
        throw usage_error("--fix=write needs files, not stdin");
      replace_config_file(path, text);
    }
  }
  // Findings whose fix was applied are done; those left unfixed stay in the report.
  std::vector<engine::finding> left;
  for (std::size_t k = 0; k < found.size(); ++k)
    if (found[k].edits.empty() || result.unfixed.count(k)) left.push_back(std::move(found[k]));
  found = std::move(left);
  return result.applied;
}

int run_lint(const lint_args& a) {
  // The diff (or the files written) is --fix's output; a --format that would be ignored is a
  // mistake in the command line, not a report in another format.
  if (a.fix && a.format != "text")
    throw usage_error("lint: --fix prints a diff or writes the files; it takes no --format " +
                      a.format);
  engine::lint_request req = request_of(a);
  const bool fix_write = a.fix && a.fix_mode == "write";
  // Checked before anything is read or written: a fix written to some files and then refused
  // for stdin would leave the run half done.
  if (fix_write && std::count(a.paths.begin(), a.paths.end(), "-") > 0)
    throw usage_error(
        "lint: --fix=write cannot write a fix back to stdin (-): use --fix to print a diff");
  req.notice_older_version = !a.fix;
  const bool progress = is_tty(2) && a.paths.size() > 1;
  engine::lint_hooks hooks = hooks_of(a, fix_write, progress);
  struct erase_progress {
    bool on;
    ~erase_progress() {
      if (on) std::cerr << "\r\x1b[K" << std::flush;
    }
  } erase{progress};
  engine::lint_run run = engine::lint(req, engine::all_rules(), hooks);
  // The process exits right after: configs and models (tens of MB on a large fleet) are left
  // to it rather than freed piece by piece (not under a sanitizer, whose leak check would object).
  struct leave_to_exit {
    engine::lint_run& run;
    ~leave_to_exit() {
#if !NGXTLS_ASAN
      for (auto& c : run.configs) (void)c.release();
      for (auto& m : run.models) (void)m.release();
#endif
    }
  } leave{run};
  report::lint_report rep;
  if (run.project) rep.project_config = run.project->path;
  rep.assumed = run.assumed;
  rep.inputs = run.inputs;
  rep.dropped_findings = run.dropped_per_rule;
  rep.notice = std::move(run.notice);
  for (std::size_t i = 0; i < run.configs.size(); ++i)
    report::note_reading(rep, run.inputs[i], *run.configs[i], *run.models[i]);

  std::string diff;
  std::size_t fixed = 0;
  for (std::size_t i = 0; i < run.configs.size(); ++i) {
    std::vector<engine::finding>& found = run.findings[i];
    if (a.fix) fixed += fix_findings(*run.configs[i], found, a, diff);
    if (rep.findings.empty()) {
      rep.findings = std::move(found);
    } else {
      rep.findings.insert(rep.findings.end(), std::make_move_iterator(found.begin()),
                          std::make_move_iterator(found.end()));
    }
    // Moved-from records still hold their full size: one copy of the findings at a time.
    std::vector<engine::finding>().swap(found);
  }
  if (a.fix) {
    if (a.fix_mode != "write") write_output(a.output, diff);
    std::cerr << "ngxtls: " << fixed << (fixed == 1 ? " finding" : " findings")
              << (a.fix_mode == "write" ? " fixed in place" : " fixed by the diff") << "; "
              << rep.findings.size() << " left without a mechanical fix\n";
  }

  // One cause repeated in many servers is reported once, with every place.
  report::merge_identical(rep.findings);
  mark_known_places(rep, run, a);
  // With --fix (not =write) stdout holds the diff; the remaining findings are not printed over it.
  if (!a.fix || a.fix_mode == "write") {
    report::output_context ctx;
    ctx.color = use_color(a.color, 1, !a.output.empty() && a.output != "-");
    ctx.working_dir = rep.project_root;
    const auto& format = report::format_for(report::command::lint, a.format);
    write_output(a.output, [&](std::ostream& os) { format.lint(rep, ctx, os); });
  }

  const int code = exit_code_of(rep, a.fail_on);
#if !NGXTLS_ASAN
  // The process ends next: freeing 100,000s of findings one by one took a tenth of a 20 MB
  // lint. The kernel takes the memory back at exit.
  (void)new report::lint_report(std::move(rep));
#endif
  return code;
}

}  // namespace

void register_lint(CLI::App& app, std::function<int()>& run) {
  auto a = std::make_shared<lint_args>();
  auto* sub =
      app.add_subcommand("lint", "Lint nginx TLS configuration: resumption, ticket keys, stapling");
  sub->add_option("paths", a->paths,
                  "nginx.conf files, site files, snippets, directories (/etc/nginx, a folder of "
                  "site files), saved `nginx -T` dumps, or - for stdin");
  sub->add_option("--conf-prefix", a->conf_prefix,
                  "nginx's conf prefix (default: the main file's directory)");
  add_version_options(sub, a->nginx_version, a->openssl_version,
                      "nginx version to assume (e.g. 1.22.1)",
                      "OpenSSL version to assume (e.g. 3.0.19)");
  sub->add_flag("--fleet", a->fleet, "the configs are instances serving the same names");
  sub->add_option("--format", a->format, "output format")
      ->check(CLI::IsMember(report::format_names(report::command::lint)));
  sub->add_option("-o,--output", a->output, "write the report to FILE");
  sub->add_option("--fail-on", a->fail_on, "exit 1 on findings at or above this severity")
      ->check(CLI::IsMember({"error", "warning", "note", "never"}));
  add_rule_selection(sub, a->select, a->ignore);
  add_color_option(sub, a->color);
  sub->add_option("--config", a->config_file, ".ngxtls.toml to use (default: found in . or above)");
  sub->add_option("--baseline", a->baseline, "the config deployed before this one (key rotation)");
  sub->add_option("--baseline-report", a->baseline_report,
                  "a previous report (SARIF or --format json): report and fail only on findings "
                  "not in it");
  sub->add_option("--project-root", a->project_root,
                  "directory SARIF and GitHub paths are relative to (default: the git work tree "
                  "holding the working directory, else the working directory)");
  sub->add_flag("--strict-files", a->strict_files, "missing certificate and key files are errors");
  add_context_option(sub, a->site_context);
  auto* fix = sub->add_option("--fix", a->fix_mode,
                              "print a unified diff of the mechanical fixes (patch -p1), or apply "
                              "them with --fix=write")
                  ->expected(0, 1)
                  ->check(CLI::IsMember({"", "print", "write"}));
  sub->callback([a, fix, &run] {
    a->fix = fix->count() > 0;
    run = [a] { return run_lint(*a); };
  });
}

}  // namespace ngxtls::cli
