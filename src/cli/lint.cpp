// ngxtls lint: parse, model, rules, report.

#include <unistd.h>

#include <filesystem>
#include <memory>

#include "base/error.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "engine/engine.hpp"
#include "engine/project_config.hpp"
#include "model/model.hpp"
#include "report/lint_output.hpp"

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
};

std::optional<engine::project_config> project(const std::string& explicit_path) {
  if (!explicit_path.empty()) return engine::load_project_config(explicit_path);
  char buf[4096];
  if (!getcwd(buf, sizeof buf)) return std::nullopt;
  if (auto p = engine::find_project_config(buf)) return engine::load_project_config(*p);
  return std::nullopt;
}

void check_rule_ids(const std::vector<std::string>& ids, const char* flag) {
  for (const auto& id : ids)
    if (!engine::find_rule(id)) throw usage_error(std::string(flag) + ": unknown rule \"" + id + "\" (see `ngxtls rules`)");
}

int run_lint(const lint_args& a) {
  auto pc = project(a.config_file);
  report::lint_report rep;
  rep.assumed = choose_versions(a.nginx_version, a.openssl_version, pc);

  engine::lint_options opts;
  opts.strict_files = a.strict_files || (pc && pc->strict_files.value_or(false));
  check_rule_ids(a.select, "--select");
  check_rule_ids(a.ignore, "--ignore");
  if (!a.select.empty()) opts.select = std::set<std::string>(a.select.begin(), a.select.end());
  else if (pc && pc->select) opts.select = pc->select;
  if (pc) opts.ignore = pc->ignore;
  opts.ignore.insert(a.ignore.begin(), a.ignore.end());
  if (pc) opts.severity_overrides = pc->severity_overrides;

  std::vector<std::string> paths = a.paths;
  bool fleet = a.fleet;
  if (paths.empty() && pc && !pc->fleet.empty()) {
    paths = pc->fleet;
    fleet = true;
  }
  if (paths.empty()) throw usage_error("lint: name a config file, or - for stdin");
  if (std::count(paths.begin(), paths.end(), "-") > 1) throw usage_error("lint: stdin (-) can be read once");

  config::load_options lo;
  if (!a.conf_prefix.empty()) lo.conf_prefix = a.conf_prefix;
  // Configs and models live side by side: models point into their configs.
  std::vector<std::unique_ptr<config::config>> configs;
  std::vector<std::unique_ptr<model::model>> models;
  for (const auto& p : paths) {
    configs.push_back(std::make_unique<config::config>(load_input(p, lo)));
    models.push_back(std::make_unique<model::model>(model::build(*configs.back(), rep.assumed)));
    rep.inputs.push_back(p);
  }
  std::unique_ptr<config::config> base_cfg;
  std::unique_ptr<model::model> base_model;
  if (!a.baseline.empty()) {
    base_cfg = std::make_unique<config::config>(load_input(a.baseline, lo));
    base_model = std::make_unique<model::model>(model::build(*base_cfg, rep.assumed));
    opts.baseline = base_model.get();
  }
  if (fleet)
    for (std::size_t i = 0; i < models.size(); ++i) opts.fleet.push_back({paths[i], models[i].get()});

  for (const auto& m : models) {
    auto found = engine::run(*m, opts);
    rep.findings.insert(rep.findings.end(), std::make_move_iterator(found.begin()),
                        std::make_move_iterator(found.end()));
  }

  if (a.format == "json") write_output(a.output, report::render_json(rep));
  else write_output(a.output, report::render_text(rep, a.output.empty() && is_tty(1)));

  if (a.fail_on == "never") return exit_ok;
  auto threshold = engine::parse_severity(a.fail_on).value_or(engine::severity::warning);
  for (const auto& f : rep.findings)
    if (static_cast<int>(f.level) <= static_cast<int>(threshold)) return exit_findings;
  return exit_ok;
}

}  // namespace

void register_lint(CLI::App& app, std::function<int()>& run) {
  auto a = std::make_shared<lint_args>();
  auto* sub = app.add_subcommand("lint", "Lint nginx TLS configuration: resumption, ticket keys, stapling");
  sub->add_option("paths", a->paths, "nginx.conf files, saved `nginx -T` dumps, or - for stdin");
  sub->add_option("--conf-prefix", a->conf_prefix, "nginx's conf prefix (default: the main file's directory)");
  sub->add_option("--nginx-version", a->nginx_version, "nginx version to assume (e.g. 1.22.1)")->take_last();
  sub->add_option("--openssl-version", a->openssl_version, "OpenSSL version to assume (e.g. 3.0.19)")->take_last();
  sub->add_flag("--fleet", a->fleet, "the configs are instances serving the same names");
  sub->add_option("--format", a->format, "output format")->check(CLI::IsMember({"text", "json"}));
  sub->add_option("-o,--output", a->output, "write the report to FILE");
  sub->add_option("--fail-on", a->fail_on, "exit 1 on findings at or above this severity")
      ->check(CLI::IsMember({"error", "warning", "note", "never"}));
  sub->add_option("--select", a->select, "only these rule ids")->delimiter(',');
  sub->add_option("--ignore", a->ignore, "skip these rule ids")->delimiter(',');
  sub->add_option("--config", a->config_file, ".ngxtls.toml to use (default: found in . or above)");
  sub->add_option("--baseline", a->baseline, "the config deployed before this one (key rotation)");
  sub->add_flag("--strict-files", a->strict_files, "missing certificate and key files are errors");
  sub->callback([a, &run] { run = [a] { return run_lint(*a); }; });
}

}  // namespace ngxtls::cli
