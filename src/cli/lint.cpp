// ngxtls lint: parse, model, rules, report.

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "base/error.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "config/site_files.hpp"
#include "engine/engine.hpp"
#include "engine/fix.hpp"
#include "engine/project_config.hpp"
#include "model/model.hpp"
#include "report/lint_output.hpp"
#include "report/sarif_output.hpp"
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
  bool strict_files = false;
  bool fix = false;      ///< --fix given
  std::string fix_mode;  ///< "" (print the diff) or "write"
};

// The working directory, which SARIF and GitHub paths are made relative to.
std::string current_dir() {
  std::error_code ec;
  auto p = std::filesystem::current_path(ec);
  return ec ? std::string() : p.string();
}

void check_rule_ids(const std::vector<std::string>& ids, const char* flag) {
  for (const auto& id : ids)
    if (!engine::find_rule(id))
      throw usage_error(std::string(flag) + ": unknown rule \"" + id + "\" (see `ngxtls rules`)");
}

// The findings of the same configs on the oldest measured nginx, against those of the assumed
// (newest known) one: the report's first line names what would differ there. Only when the
// version is neither given nor detected; it lints once more (models built for that version).
report::version_notice older_version_notice(
    const report::lint_report& rep, const std::vector<std::unique_ptr<config::config>>& configs,
    const std::vector<std::string>& paths, bool fleet,
    const std::unique_ptr<config::config>& base_cfg, const engine::lint_options& opts) {
  report::version_notice n;
  n.older = model::oldest_measured_nginx;
  model::assumed_versions older = rep.assumed;
  older.nginx = n.older;
  std::vector<std::unique_ptr<model::model>> models;
  for (const auto& c : configs)
    models.push_back(std::make_unique<model::model>(model::build(*c, older)));
  engine::lint_options o = opts;
  o.fleet.clear();
  std::unique_ptr<model::model> base;
  if (base_cfg) {
    base = std::make_unique<model::model>(model::build(*base_cfg, older));
    o.baseline = base.get();
  }
  if (fleet)
    for (std::size_t i = 0; i < models.size(); ++i) o.fleet.push_back({paths[i], models[i].get()});
  using key = std::tuple<std::string, std::string, std::uint32_t, std::uint32_t>;
  auto key_of = [](const engine::finding& f) {
    return key{f.location.file, f.rule, f.location.line, f.location.column};
  };
  std::map<key, std::pair<std::optional<engine::severity>, std::optional<engine::severity>>> both;
  std::map<key, source_location> where;
  for (const auto& f : rep.findings) {
    auto& slot = both[key_of(f)].first;
    if (!slot || *slot > f.level) slot = f.level;
    where.emplace(key_of(f), f.location);
  }
  for (const auto& m : models)
    for (const auto& f : engine::run(*m, o)) {
      auto& slot = both[key_of(f)].second;
      if (!slot || *slot > f.level) slot = f.level;
      where.emplace(key_of(f), f.location);
    }
  for (const auto& [k, sev] : both)
    if (sev.first != sev.second)
      n.differences.push_back({std::get<1>(k), where.at(k), sev.first, sev.second});
  return n;
}

// How input `path` was read (when not as a main nginx.conf) and its TLS servers, for the
// report's header and summary line.
void note_reading(report::lint_report& rep, const std::string& path, const config::config& cfg,
                  const model::model& m) {
  rep.files_read += cfg.files.size();
  for (const auto& s : m.servers) rep.tls_servers += model::offers_tls(s);
  if (cfg.implied == config::implied_context::none && cfg.skipped_files.empty()) return;
  const std::string how = cfg.implied == config::implied_context::none && !cfg.files.empty()
                              ? "from " + cfg.files.front().path + " and the files it includes"
                              : config::describe(cfg.implied);
  rep.readings.push_back(
      {path, config::context_name(cfg.implied), how, cfg.implied_reason, cfg.skipped_files});
}

int run_lint(const lint_args& a) {
  // The diff (or the files written) is --fix's output; a --format that would be ignored is a
  // mistake in the command line, not a report in another format.
  if (a.fix && a.format != "text")
    throw usage_error("lint: --fix prints a diff or writes the files; it takes no --format " +
                      a.format);
  auto pc = load_project(a.config_file);
  report::lint_report rep;
  if (pc) rep.project_config = pc->path;
  rep.assumed = choose_versions(a.nginx_version, a.openssl_version, pc);

  engine::lint_options opts;
  opts.strict_files = a.strict_files || (pc && pc->strict_files.value_or(false));
  check_rule_ids(a.select, "--select");
  check_rule_ids(a.ignore, "--ignore");
  if (!a.select.empty())
    opts.select = std::set<std::string>(a.select.begin(), a.select.end());
  else if (pc && pc->select)
    opts.select = pc->select;
  if (pc) opts.ignore = pc->ignore;
  opts.ignore.insert(a.ignore.begin(), a.ignore.end());
  if (pc) opts.severity_overrides = pc->severity_overrides;
  if (pc && pc->expiry_days) opts.expiry_window_days = *pc->expiry_days;
  if (pc) opts.new_sessions_per_second = pc->new_sessions_per_second;
  if (pc) opts.modules = pc->modules;

  std::vector<std::string> paths = a.paths;
  bool fleet = a.fleet;
  if (paths.empty() && pc && !pc->fleet.empty()) {
    paths = pc->fleet;
    fleet = true;
  }
  if (paths.empty()) throw usage_error("lint: name a config file, or - for stdin");
  if (std::count(paths.begin(), paths.end(), "-") > 1)
    throw usage_error("lint: stdin (-) can be read once");
  // Checked before anything is read or written: a fix written to some files and then refused
  // for stdin would leave the run half done.
  if (a.fix && a.fix_mode == "write" && std::count(paths.begin(), paths.end(), "-") > 0)
    throw usage_error(
        "lint: --fix=write cannot write a fix back to stdin (-): use --fix to print a diff");

  config::load_options lo;
  if (!a.conf_prefix.empty()) lo.conf_prefix = a.conf_prefix;
  // Large files are mapped and their pages dropped after the parse (peak memory, issue 6);
  // not when --fix=write rewrites them in place while they are still read.
  if (!(a.fix && a.fix_mode == "write")) lo.map_min_bytes = config::lint_map_min_bytes;
  // Configs and models live side by side: models point into their configs.
  std::vector<std::unique_ptr<config::config>> configs;
  std::vector<std::unique_ptr<model::model>> models;
  // The process exits right after: configs and models (tens of MB on a large fleet) are left
  // to it rather than freed piece by piece (not under a sanitizer, whose leak check would object).
  struct leave_to_exit {
    std::vector<std::unique_ptr<config::config>>& configs;
    std::vector<std::unique_ptr<model::model>>& models;
    ~leave_to_exit() {
#if !NGXTLS_ASAN
      for (auto& c : configs) (void)c.release();
      for (auto& m : models) (void)m.release();
#endif
    }
  } leave{configs, models};
  for (const auto& p : paths) {
    configs.push_back(std::make_unique<config::config>(load_input(p, lo)));
    models.push_back(std::make_unique<model::model>(model::build(*configs.back(), rep.assumed)));
    rep.inputs.push_back(p);
    note_reading(rep, p, *configs.back(), *models.back());
  }
  // A dump's files are the dumped host's (and its text may not be what is at those paths
  // here): writing fixes to them would replace files on this machine with the dump's text.
  if (a.fix && a.fix_mode == "write")
    for (std::size_t i = 0; i < configs.size(); ++i)
      if (configs[i]->from_dump)
        throw usage_error("lint: --fix=write cannot write into an nginx -T dump (" + paths[i] +
                          "): its files are the dumped host's; use --fix to print a diff");
  std::unique_ptr<config::config> base_cfg;
  std::unique_ptr<model::model> base_model;
  if (!a.baseline.empty()) {
    base_cfg = std::make_unique<config::config>(load_input(a.baseline, lo));
    base_model = std::make_unique<model::model>(model::build(*base_cfg, rep.assumed));
    opts.baseline = base_model.get();
  }
  if (fleet)
    for (std::size_t i = 0; i < models.size(); ++i)
      opts.fleet.push_back({paths[i], models[i].get()});
  {
    std::vector<const config::config*> read{base_cfg.get()};
    for (const auto& c : configs) read.push_back(c.get());
    refuse_output_over_config(a.output, read);
  }

  std::string diff;
  std::size_t fixed = 0;
  for (std::size_t i = 0; i < models.size(); ++i) {
    engine::run_result counted = engine::run_counted(*models[i], opts);
    for (const auto& [rule, n] : counted.dropped_per_rule) rep.dropped_findings[rule] += n;
    std::vector<engine::finding>& found = counted.findings;
    if (a.fix) {
      // The diff is the output; findings without a mechanical fix still decide the exit code.
      auto result = engine::apply_fixes(*configs[i], found);
      diff += result.diff;
      fixed += result.applied;
      for (const auto& c : result.conflicts)
        std::cerr << "ngxtls: not fixed (overlaps another fix): " << report::terminal_safe(c)
                  << '\n';
      for (const auto& c : result.refused)
        std::cerr << "ngxtls: not fixed: " << report::terminal_safe(c) << '\n';
      if (a.fix_mode == "write") {
        for (const auto& [path, text] : result.files) {
          if (path == "<stdin>" || configs[i]->files.empty())
            throw usage_error("--fix=write needs files, not stdin");
          replace_config_file(path, text);
        }
      }
      // Findings whose fix was applied are done; those left unfixed stay in the report.
      std::vector<engine::finding> left;
      for (std::size_t k = 0; k < found.size(); ++k)
        if (found[k].edits.empty() || result.unfixed.count(k)) left.push_back(std::move(found[k]));
      found = std::move(left);
    }
    rep.findings.insert(rep.findings.end(), std::make_move_iterator(found.begin()),
                        std::make_move_iterator(found.end()));
  }
  // A mapped file edited in place during the run would mix two versions in the results
  // (files of 1 MiB or more are mapped, see load_options::map_min_bytes).
  for (const auto& c : configs)
    if (auto changed = c->changed_file())
      throw input_error({*changed, 0, 0}, "the file changed while it was being read; run again");
  if (!a.fix && !rep.assumed.nginx_pinned)
    rep.notice = older_version_notice(rep, configs, paths, fleet, base_cfg, opts);
  if (a.fix) {
    if (a.fix_mode != "write") write_output(a.output, diff);
    std::cerr << "ngxtls: " << fixed << (fixed == 1 ? " finding" : " findings")
              << (a.fix_mode == "write" ? " fixed in place" : " fixed by the diff") << "; "
              << rep.findings.size() << " left without a mechanical fix\n";
  }

  if (a.fix && a.fix_mode != "write") {
    // stdout holds the diff; the remaining findings are not printed over it.
  } else if (a.format == "json") {
    write_output(a.output, [&](std::ostream& os) { report::write_json(rep, os); });
  } else if (a.format == "sarif") {
    write_output(a.output, [&](std::ostream& os) { report::write_sarif(rep, current_dir(), os); });
  } else if (a.format == "github") {
    write_output(a.output, [&](std::ostream& os) { report::write_github(rep, current_dir(), os); });
  } else {
    const bool color = a.output.empty() && is_tty(1);
    write_output(a.output, [&](std::ostream& os) { report::write_text(rep, color, os); });
  }

  if (a.fail_on == "never") return exit_ok;
  auto threshold = engine::parse_severity(a.fail_on).value_or(engine::severity::warning);
  for (const auto& f : rep.findings)
    if (static_cast<int>(f.level) <= static_cast<int>(threshold)) return exit_findings;
  return exit_ok;
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
  sub->add_option("--nginx-version", a->nginx_version, "nginx version to assume (e.g. 1.22.1)")
      ->take_last();
  sub->add_option("--openssl-version", a->openssl_version,
                  "OpenSSL version to assume (e.g. 3.0.19)")
      ->take_last();
  sub->add_flag("--fleet", a->fleet, "the configs are instances serving the same names");
  sub->add_option("--format", a->format, "output format")
      ->check(CLI::IsMember({"text", "json", "sarif", "github"}));
  sub->add_option("-o,--output", a->output, "write the report to FILE");
  sub->add_option("--fail-on", a->fail_on, "exit 1 on findings at or above this severity")
      ->check(CLI::IsMember({"error", "warning", "note", "never"}));
  // One value per occurrence, so `--select ID conf` does not take the config path as a rule id.
  sub->add_option("--select", a->select, "only these rule ids")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--ignore", a->ignore, "skip these rule ids")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--config", a->config_file, ".ngxtls.toml to use (default: found in . or above)");
  sub->add_option("--baseline", a->baseline, "the config deployed before this one (key rotation)");
  sub->add_flag("--strict-files", a->strict_files, "missing certificate and key files are errors");
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
