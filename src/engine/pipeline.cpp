#include "engine/pipeline.hpp"

#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>
#include <utility>

#include "base/error.hpp"
#include "base/suggest.hpp"
#include "config/site_files.hpp"
#include "tls/ciphers.hpp"

namespace ngxtls::engine {

config::config load_input(const std::string& path, const config::load_options& opts) {
  if (path == "-") {
    // Bounded while it is read: a 3 GB stream must not fill memory before any check.
    config::stored_text text =
        config::read_stream_bounded(STDIN_FILENO, "<stdin>", opts.max_file_bytes);
    // An empty stdin is most often a failed `nginx -T`: never report it as a clean config.
    if (text.bytes.find_first_not_of(" \t\r\n") == std::string_view::npos)
      throw input_error({"<stdin>", 0, 0}, "empty input: nothing to lint (did `nginx -T` fail?)");
    if (config::looks_like_dump(text.bytes))
      return config::load_dump(std::move(text), "<stdin>", opts);
    // A plain config on stdin: includes still come from disk, relative to the prefix.
    config::load_options o = opts;
    if (!o.conf_prefix) {
      char buf[4096];
      o.conf_prefix = getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
    }
    auto disk = config::make_disk_source();
    config::config cfg = config::load_buffer(std::move(text), "<stdin>", *disk, o);
    config::imply_context(cfg, opts);
    return cfg;
  }
  // A directory, a site file or snippet (read inside the block nginx reads it in), a main
  // nginx.conf or a saved `nginx -T` dump; FIFOs and devices are never opened in a way
  // that blocks.
  return config::load_path(path, opts);
}

std::optional<project_config> load_project(const std::string& explicit_path,
                                           const rule_catalog& catalog, const message_sink& say) {
  std::string path = explicit_path;
  if (path.empty()) {
    char buf[4096];
    if (!getcwd(buf, sizeof buf)) return std::nullopt;
    auto found = find_project_config(buf);
    if (!found.ignored.empty() && say) say("warning: ignoring " + found.ignored);
    if (!found.path) return std::nullopt;
    path = *found.path;
  }
  auto pc = load_project_config(path, catalog);
  if (say) say("using config " + path);
  return pc;
}

namespace {

std::optional<model::version> parse_flag(const std::string& v, const char* what) {
  if (v.empty()) return std::nullopt;
  auto p = model::version::parse_given(v);
  if (!p) throw usage_error(model::unreadable_version(what, v));
  return p;
}

void check_rule_ids(const rule_catalog& catalog, const std::vector<std::string>& ids,
                    const char* flag) {
  for (const auto& id : ids)
    if (!find_rule(catalog, id))
      throw usage_error(std::string(flag) + ": unknown rule \"" + id + "\"" +
                        did_you_mean(id, ids_of(catalog)) + " (see `ngxtls rules`)");
}

// The options the rules run with: the flags over the project file.
lint_options options_of(const lint_request& r, const std::optional<project_config>& pc,
                        const rule_catalog& catalog) {
  lint_options opts;
  opts.strict_files = r.strict_files || (pc && pc->strict_files.value_or(false));
  check_rule_ids(catalog, r.select, "--select");
  check_rule_ids(catalog, r.ignore, "--ignore");
  if (!r.select.empty())
    opts.select = std::set<std::string>(r.select.begin(), r.select.end());
  else if (pc && pc->select)
    opts.select = pc->select;
  if (pc) opts.ignore = pc->ignore;
  opts.ignore.insert(r.ignore.begin(), r.ignore.end());
  if (pc) {
    opts.severity_overrides = pc->severity_overrides;
    if (pc->expiry_days) opts.expiry_window_days = *pc->expiry_days;
    opts.new_sessions_per_second = pc->new_sessions_per_second;
    opts.modules = pc->modules;
  }
  return opts;
}

// The findings of the same inputs on the oldest measured nginx, against those of the assumed
// (newest known) one: the report names what would differ there. The inputs are modelled once
// more for that version.
version_notice older_version_notice(const lint_run& run, const rule_catalog& catalog) {
  version_notice n;
  n.older = model::oldest_measured_nginx;
  model::assumed_versions older = run.assumed;
  older.nginx = n.older;
  std::vector<std::unique_ptr<model::model>> models;
  for (const auto& c : run.configs)
    models.push_back(std::make_unique<model::model>(model::build(*c, older)));
  lint_options o = run.options;
  o.fleet.clear();
  std::unique_ptr<model::model> base;
  if (run.baseline_config) {
    base = std::make_unique<model::model>(model::build(*run.baseline_config, older));
    o.baseline = base.get();
  }
  if (run.fleet)
    for (std::size_t i = 0; i < models.size(); ++i)
      o.fleet.push_back({run.inputs[i], models[i].get()});
  using key = std::tuple<std::string, std::string, std::uint32_t, std::uint32_t>;
  auto key_of = [](const finding& f) {
    return key{f.location.file, f.rule, f.location.line, f.location.column};
  };
  std::map<key, std::pair<std::optional<severity>, std::optional<severity>>> both;
  std::map<key, source_location> where;
  for (const auto& found : run.findings)
    for (const auto& f : found) {
      auto& slot = both[key_of(f)].first;
      if (!slot || *slot > f.level) slot = f.level;
      where.emplace(key_of(f), f.location);
    }
  for (const auto& m : models)
    for (const auto& f : engine::run(catalog, *m, o)) {
      auto& slot = both[key_of(f)].second;
      if (!slot || *slot > f.level) slot = f.level;
      where.emplace(key_of(f), f.location);
    }
  for (const auto& [k, sev] : both)
    if (sev.first != sev.second)
      n.differences.push_back({std::get<1>(k), where.at(k), sev.first, sev.second});
  return n;
}

}  // namespace

model::assumed_versions choose_versions(const std::string& nginx_flag,
                                        const std::string& openssl_flag,
                                        const std::optional<project_config>& pc,
                                        const nginx_inspector& nginx) {
  model::assumed_versions v;
  std::optional<model::nginx_v_info> detected;
  auto detect = [&]() -> const model::nginx_v_info& {
    if (!detected)
      detected = model::parse_nginx_v(nginx.version_output ? nginx.version_output(nginx.binary)
                                                           : std::string());
    return *detected;
  };
  if (auto f = parse_flag(nginx_flag, "nginx")) {
    v.nginx = *f;
    v.nginx_source = "--nginx-version";
    v.nginx_pinned = true;
  } else if (pc && pc->nginx_version) {
    v.nginx = *pc->nginx_version;
    v.nginx_source = pc->path;
    v.nginx_pinned = true;
  } else if (detect().nginx) {
    v.nginx = *detect().nginx;
    v.nginx_source = "nginx -V";
    v.dynamic_modules = detect().dynamic_modules;
    v.nginx_pinned = true;
    if (nginx.package_version) v.nginx_package = nginx.package_version(nginx.binary);
  } else {
    v.nginx = model::newest_known_nginx;
    v.nginx_source = "newest known; pass --nginx-version";
  }
  if (auto f = parse_flag(openssl_flag, "OpenSSL")) {
    v.openssl = *f;
    v.openssl_source = "--openssl-version";
  } else if (pc && pc->openssl_version) {
    v.openssl = *pc->openssl_version;
    v.openssl_source = pc->path;
  } else if (nginx_flag.empty() && !(pc && pc->nginx_version) && detect().openssl) {
    v.openssl = *detect().openssl;
    v.openssl_source = "nginx -V";
  } else {
    v.openssl = model::version::parse(tls::openssl_version()).value_or(model::version{3, 0, 0});
    v.openssl_source = "linked libssl";
  }
  return v;
}

lint_run lint(const lint_request& request, const rule_catalog& catalog, const lint_hooks& hooks) {
  lint_run run;
  run.project = load_project(request.project_config_path, catalog, hooks.say);
  const auto& pc = run.project;
  run.assumed = choose_versions(request.nginx_version, request.openssl_version, pc, hooks.nginx);
  run.options = options_of(request, pc, catalog);

  run.inputs = request.paths;
  run.fleet = request.fleet;
  if (run.inputs.empty() && pc && !pc->fleet.empty()) {
    run.inputs = pc->fleet;
    run.fleet = true;
  }
  if (run.inputs.empty())
    throw usage_error(request.command + ": name a config file, or - for stdin");
  if (std::count(run.inputs.begin(), run.inputs.end(), "-") > 1)
    throw usage_error(request.command + ": stdin (-) can be read once");

  config::load_options lo;
  if (!request.conf_prefix.empty()) lo.conf_prefix = request.conf_prefix;
  lo.site_context = request.site_context;
  for (const auto& p : run.inputs) {
    run.configs.push_back(std::make_unique<config::config>(load_input(p, lo)));
    run.models.push_back(
        std::make_unique<model::model>(model::build(*run.configs.back(), run.assumed)));
    if (hooks.progress) hooks.progress("read", run.models.size(), run.inputs.size());
  }
  if (!request.baseline.empty()) {
    run.baseline_config = std::make_unique<config::config>(load_input(request.baseline, lo));
    run.baseline_model =
        std::make_unique<model::model>(model::build(*run.baseline_config, run.assumed));
    run.options.baseline = run.baseline_model.get();
  }
  if (run.fleet)
    for (std::size_t i = 0; i < run.models.size(); ++i)
      run.options.fleet.push_back({run.inputs[i], run.models[i].get()});
  if (hooks.after_load) hooks.after_load(run);

  for (const auto& m : run.models) {
    run_result counted = run_counted(catalog, *m, run.options);
    for (const auto& [rule, n] : counted.dropped_per_rule) run.dropped_per_rule[rule] += n;
    run.findings.push_back(std::move(counted.findings));
    if (hooks.progress) hooks.progress("linted", run.findings.size(), run.models.size());
  }
  if (request.notice_older_version && !run.assumed.nginx_pinned)
    run.notice = older_version_notice(run, catalog);
  return run;
}

}  // namespace ngxtls::engine
