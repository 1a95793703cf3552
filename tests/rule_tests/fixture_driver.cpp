// The rule fixture driver (fixture_driver.hpp): checks the folders fixtures/rules/<rule-id>/
// (CONVENTIONS, Rule tests).
//
// Each NAME.conf of the folder is linted with only that rule selected. A line that must carry a
// finding says so in a comment: `# expect: RULE [SEVERITY] [col N] ["TEXT"]`, several items
// separated by commas. SEVERITY (error, warning, note), the column N and a message text are
// optional: a finding must match each one given (TEXT: the message contains it; `\"` and `\\`
// escape a quote and a backslash). Every finding must match an expectation and every
// expectation a finding; a file without expectations must give no finding of the rule.
// NAME.fixed.conf beside NAME.conf is NAME.conf after `lint --fix` applied the findings' edits
// (and likewise beside an included file that a fix changes); every file a fix changes must have
// one (NGXTLS_WRITE_FIXED=1 writes the missing ones into fixtures/rules, to be read before they
// are committed). `{FIXTURE_DIR}` in it stands for the absolute path of the fixture's folder.
//
// Header comments set options: `# nginx-version: V` (default 1.22.1), `# openssl-version: V`
// (default 3.0.19), `# nginx-package: V` (the Debian package version dpkg-query would report;
// default none), `# nginx-dynamic-modules: NAME...` (modules nginx -V shows as
// --with-NAME=dynamic), `# baseline: FILE`, `# fleet: FILE...`, `# strict-files`, and the
// .ngxtls.toml settings `# expiry-days: N`, `# new-sessions-per-second: N`, `# modules: NAME...`.
//
// NGXTLS_SHOW_FINDINGS=1 prints every finding of each fixture (location, severity, message), for
// writing expectations.

#include "rule_tests/fixture_driver.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "config/loader.hpp"
#include "config/site_files.hpp"
#include "engine/fix.hpp"
#include "model/model.hpp"
#include "support/fixture_env.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;

namespace ngxtls::test {
namespace {

/// One `# expect:` item.
struct expectation {
  std::string file;
  std::uint32_t line = 0;
  std::string severity;                 ///< "" = any
  std::optional<std::uint32_t> column;  ///< nullopt = any
  std::optional<std::string> text;      ///< the message contains it; nullopt = any
  std::string spelled;                  ///< as written, for messages

  std::size_t constraints() const {
    return !severity.empty() + column.has_value() + text.has_value();
  }
};

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.erase(s.begin());
  return s;
}

/// The comma-separated items of an expect list; commas inside a quoted text do not split.
std::vector<std::string> split_items(const std::string& list) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const char c = list[i];
    if (quoted && c == '\\' && i + 1 < list.size()) {
      out.back() += c;
      out.back() += list[++i];
      continue;
    }
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) {
      out.emplace_back();
      continue;
    }
    out.back() += c;
  }
  return out;
}

/// Parses one item ("RULE [SEVERITY] [col N] [\"TEXT\"]"); throws std::runtime_error when the
/// item is malformed, so that a typo in a fixture fails instead of matching anything.
expectation parse_item(const std::string& item, const std::string& file, std::uint32_t line,
                       std::string& rule) {
  expectation e;
  e.file = file;
  e.line = line;
  e.spelled = trim(item);
  std::string rest = e.spelled;
  const auto quote = rest.find('"');
  if (quote != std::string::npos) {
    std::string text;
    std::size_t i = quote + 1;
    for (; i < rest.size() && rest[i] != '"'; ++i) {
      if (rest[i] == '\\' && i + 1 < rest.size()) ++i;
      text += rest[i];
    }
    if (i >= rest.size() || !trim(rest.substr(i + 1)).empty())
      throw std::runtime_error("unterminated or trailing text after the message in: " + e.spelled);
    e.text = text;
    rest = rest.substr(0, quote);
  }
  std::istringstream words(rest);
  words >> rule;
  std::string w;
  while (words >> w) {
    if (w == "error" || w == "warning" || w == "note") {
      e.severity = w;
    } else if (w == "col") {
      std::string n;
      if (!(words >> n) || n.empty() ||
          !std::all_of(n.begin(), n.end(), [](unsigned char c) { return std::isdigit(c); }))
        throw std::runtime_error("`col` needs a number in: " + e.spelled);
      e.column = static_cast<std::uint32_t>(std::stoul(n));
    } else {
      throw std::runtime_error("unknown word \"" + w + "\" in: " + e.spelled);
    }
  }
  return e;
}

/// Every expectation naming `rule`, from every file of the config.
std::vector<expectation> expectations(const config::config& cfg, const std::string& rule) {
  std::vector<expectation> out;
  for (const auto& f : cfg.files) {
    std::istringstream in{std::string(f.content)};
    std::string line;
    std::uint32_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      const auto p = line.find("# expect:");
      if (p == std::string::npos) continue;
      for (const auto& item : split_items(line.substr(p + 9))) {
        std::string id;
        expectation e = parse_item(item, f.path, n, id);
        if (id == rule) out.push_back(std::move(e));
      }
    }
  }
  return out;
}

bool matches(const expectation& e, const engine::finding& f) {
  return e.file == f.location.file && e.line == f.location.line &&
         (e.severity.empty() || e.severity == engine::to_string(f.level)) &&
         (!e.column || *e.column == f.location.column) &&
         (!e.text || f.message.find(*e.text) != std::string::npos);
}

std::string describe(const engine::finding& f) {
  return to_string(f.location) + " " + engine::to_string(f.level) + ": " + f.message;
}

/// What differs between the findings and the expectations ("" when they agree). The most
/// constrained expectations pick their finding first, so that a looser one on the same line
/// does not take the finding a stricter one needs.
std::string compare(std::vector<expectation> expected,
                    const std::vector<engine::finding>& findings) {
  std::stable_sort(expected.begin(), expected.end(),
                   [](const auto& a, const auto& b) { return a.constraints() > b.constraints(); });
  std::vector<bool> used(findings.size(), false);
  std::string problems;
  for (const auto& e : expected) {
    bool found = false;
    for (std::size_t i = 0; i < findings.size() && !found; ++i) {
      if (used[i] || !matches(e, findings[i])) continue;
      used[i] = found = true;
    }
    if (!found)
      problems += "\n  no finding matches `# expect: " + e.spelled + "` at " + e.file + ":" +
                  std::to_string(e.line);
  }
  for (std::size_t i = 0; i < findings.size(); ++i)
    if (!used[i]) problems += "\n  unexpected finding: " + describe(findings[i]);
  if (!problems.empty()) {
    problems += "\n  all findings:";
    for (const auto& f : findings) problems += "\n    " + describe(f);
  }
  return problems;
}

std::vector<std::string> header_values(const std::string& text, const std::string& key) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# " + key, 0) != 0) continue;
    std::istringstream words(line.substr(2 + key.size()));
    std::string w;
    while (words >> w) out.push_back(w);
    if (out.empty()) out.push_back("");
  }
  return out;
}

struct loaded {
  std::unique_ptr<config::config> cfg;
  std::unique_ptr<model::model> m;
};

loaded load(const fs::path& p, const model::assumed_versions& v) {
  loaded l;
  // As `ngxtls lint FILE` reads it: a site file inside the block nginx reads it in.
  l.cfg = std::make_unique<config::config>(config::load_site_file(p.string(), {}));
  l.m = std::make_unique<model::model>(model::build(*l.cfg, v));
  return l;
}

/// `text` with each absolute path into the fixture's temporary copy written as
/// `{FIXTURE_DIR}`, so that a .fixed.conf holds no temporary path.
std::string fixture_dir_placeholder(std::string text, const fs::path& rule_dir) {
  const std::string dir = rule_dir.string();
  for (auto p = text.find(dir); p != std::string::npos; p = text.find(dir, p))
    text.replace(p, dir.size(), "{FIXTURE_DIR}");
  return text;
}

bool is_fixed_file(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 11 && name.compare(name.size() - 11, 11, ".fixed.conf") == 0;
}

/// `problems` with the temporary copy of the folder named as the folder under fixtures/.
std::string as_in_source_tree(std::string problems, const fs::path& copy, const std::string& rule) {
  const std::string from = copy.string(), to = "fixtures/rules/" + rule;
  for (auto p = problems.find(from); p != std::string::npos; p = problems.find(from, p + to.size()))
    problems.replace(p, from.size(), to);
  return problems;
}

}  // namespace

std::string check_fixture(const engine::rule_catalog& catalog, const std::string& rule,
                          const fs::path& rule_dir, const fs::path& file,
                          const std::optional<fs::path>& write_to) {
  const std::string text = read_file(file);
  model::assumed_versions v;
  v.nginx = *model::version::parse("1.22.1");
  v.nginx_source = "fixture";
  v.openssl = *model::version::parse("3.0.19");
  if (auto nv = header_values(text, "nginx-version:"); !nv.empty())
    v.nginx = *model::version::parse(nv[0]);
  if (auto ov = header_values(text, "openssl-version:"); !ov.empty())
    v.openssl = *model::version::parse(ov[0]);
  if (auto pv = header_values(text, "nginx-package:"); !pv.empty()) v.nginx_package = pv[0];
  for (const auto& mod : header_values(text, "nginx-dynamic-modules:"))
    v.dynamic_modules.insert(mod);
  loaded main = load(file, v);
  engine::lint_options opts;
  opts.select = std::set<std::string>{rule};
  opts.strict_files = !header_values(text, "strict-files").empty();
  if (auto e = header_values(text, "expiry-days:"); !e.empty())
    opts.expiry_window_days = std::stoi(e[0]);
  if (auto r = header_values(text, "new-sessions-per-second:"); !r.empty())
    opts.new_sessions_per_second = std::stod(r[0]);
  for (const auto& mod : header_values(text, "modules:")) opts.modules.insert(mod);
  std::vector<loaded> others;
  if (auto b = header_values(text, "baseline:"); !b.empty()) {
    others.push_back(load(rule_dir / b[0], v));
    opts.baseline = others.back().m.get();
  }
  if (auto fl = header_values(text, "fleet:"); !fl.empty()) {
    opts.fleet.push_back({file.string(), main.m.get()});
    for (const auto& f : fl) {
      others.push_back(load(rule_dir / f, v));
      opts.fleet.push_back({f, others.back().m.get()});
    }
  }
  const auto findings = engine::run(catalog, *main.m, opts);
  // For writing expectations: every finding as the driver sees it.
  if (std::getenv("NGXTLS_SHOW_FINDINGS"))
    for (const auto& f : findings)
      std::cout << as_in_source_tree(describe(f), rule_dir, rule) << "\n";
  for (const auto& f : findings)
    if (f.rule != rule) return "\n  a finding of another rule: " + f.rule;
  std::string problems = compare(expectations(*main.cfg, rule), findings);

  // Each file the fixes change (the fixture, or a file it includes) against its .fixed.conf.
  const auto fixed = engine::apply_fixes(*main.cfg, findings);
  const auto fixed_name = [](const fs::path& p) {
    fs::path f = p;
    return f.replace_extension(".fixed.conf");
  };
  std::set<std::string> compared;
  for (const auto& [path, content] : fixed.files) {
    const fs::path want = fixed_name(path);
    const std::string got = fixture_dir_placeholder(content, rule_dir);
    compared.insert(want.string());
    if (!fs::exists(want)) {
      problems += "\n  the findings carry a fix: write the fixed text of " + path + " to " +
                  want.filename().string() + " (NGXTLS_WRITE_FIXED=1 writes it)";
      if (write_to && std::getenv("NGXTLS_WRITE_FIXED"))
        std::ofstream(*write_to / fs::relative(want, rule_dir), std::ios::binary) << got;
    } else if (got != read_file(want)) {
      problems += "\n  after --fix " + path + " differs from " + want.filename().string() +
                  "; it reads:\n" + got;
    }
  }
  // A .fixed.conf of the fixture itself that no fix produced: the fix has gone.
  if (fs::exists(fixed_name(file)) && !compared.count(fixed_name(file).string()))
    problems += "\n  no fix changed the fixture, but " + fixed_name(file).filename().string() +
                " expects one";
  return problems;
}

std::vector<fixture_problems> rule_folder_problems(const engine::rule_catalog& catalog,
                                                   const std::string& rule) {
  const fs::path source = source_dir() / "fixtures/rules" / rule;
  if (!fs::is_directory(source)) return {{"fixtures/rules/" + rule, "\n  no such folder"}};
  temp_dir tmp;
  const fs::path rule_dir = tmp.path() / "rules" / rule;
  fs::create_directories(rule_dir.parent_path());
  fs::copy(source, rule_dir, fs::copy_options::recursive);
  make_fixture_material(rule_dir);
  make_certificate_material(rule_dir);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(rule_dir))
    if (e.is_regular_file() && e.path().extension() == ".conf" && !is_fixed_file(e.path()))
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<fixture_problems> out;
  if (files.size() < 2)
    out.push_back({"fixtures/rules/" + rule, "\n  needs positive fixtures and negative controls"});
  for (const auto& file : files) {
    std::string problems;
    try {
      problems = check_fixture(catalog, rule, rule_dir, file, source);
    } catch (const std::exception& e) {
      problems = std::string("\n  ") + e.what();
    }
    out.push_back({"fixtures/rules/" + rule + "/" + file.filename().string(),
                   as_in_source_tree(problems, rule_dir, rule)});
  }
  return out;
}

void check_rule_folder(const engine::rule_catalog& catalog, const std::string& rule) {
  REQUIRE_MESSAGE(engine::find_rule(catalog, rule) != nullptr,
                  "fixture folder names no rule: " << rule);
  for (const auto& [file, problems] : rule_folder_problems(catalog, rule))
    CHECK_MESSAGE(problems.empty(), file << ":" << problems);
}

std::vector<std::string> rule_fixture_folders() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(source_dir() / "fixtures/rules", ec))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ngxtls::test
