// One driver for every rule fixture (CONVENTIONS, Rule tests): fixtures/rules/<rule-id>/*.conf
// with `# expect: <rule-id> [severity]` on each line where a finding must point. A file
// without such a line must give no finding of that rule. Header comments set options:
// `# nginx-version: V` (default 1.22.1), `# openssl-version: V` (default 3.0.19),
// `# nginx-package: V` (the Debian package version dpkg-query would report; default none),
// `# nginx-dynamic-modules: NAME...` (modules nginx -V shows as --with-NAME=dynamic),
// `# baseline: FILE`, `# fleet: FILE...`, `# strict-files`, and the .ngxtls.toml settings
// `# expiry-days: N`, `# new-sessions-per-second: N`, `# modules: NAME...`.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "config/loader.hpp"
#include "config/site_files.hpp"
#include "engine/engine.hpp"
#include "model/model.hpp"
#include "support/fixture_env.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;

namespace {

struct expectation {
  std::string file;
  std::uint32_t line;
  std::string severity;  // "" = any
  bool operator<(const expectation& o) const {
    return std::tie(file, line, severity) < std::tie(o.file, o.line, o.severity);
  }
  bool operator==(const expectation& o) const = default;
};

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  return s;
}

// Every `# expect: rule [severity], ...` naming `rule`, from every file of the config.
std::multiset<expectation> expectations(const config::config& cfg, const std::string& rule) {
  std::multiset<expectation> out;
  for (const auto& f : cfg.files) {
    std::istringstream in{std::string(f.content)};
    std::string line;
    std::uint32_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      auto p = line.find("# expect:");
      if (p == std::string::npos) continue;
      std::string list = line.substr(p + 9);
      std::stringstream items(list);
      std::string item;
      while (std::getline(items, item, ',')) {
        std::istringstream words(trim(item));
        std::string id, sev;
        words >> id >> sev;
        if (id == rule) out.insert({f.path, n, sev});
      }
    }
  }
  return out;
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

}  // namespace

TEST_CASE("every rule fixture gives exactly the findings its expect comments name") {
  test::temp_dir tmp;
  const fs::path src = test::source_dir() / "fixtures/rules";
  fs::copy(src, tmp.path() / "rules", fs::copy_options::recursive);
  std::size_t fixtures = 0, expected_total = 0;
  for (const auto& rule_dir : fs::directory_iterator(tmp.path() / "rules")) {
    if (!rule_dir.is_directory()) continue;
    const std::string rule = rule_dir.path().filename().string();
    REQUIRE_MESSAGE(engine::find_rule(rule) != nullptr, "fixture folder names no rule: " << rule);
    test::make_fixture_material(rule_dir.path());
    test::make_certificate_material(rule_dir.path());
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(rule_dir.path()))
      if (e.is_regular_file() && e.path().extension() == ".conf") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    CHECK_MESSAGE(files.size() >= 2, rule << " needs positive fixtures and negative controls");
    for (const auto& file : files) {
      INFO("fixture: " << rule << "/" << file.filename().string());
      const std::string text = test::read_file(file);
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
        others.push_back(load(rule_dir.path() / b[0], v));
        opts.baseline = others.back().m.get();
      }
      if (auto fl = header_values(text, "fleet:"); !fl.empty()) {
        opts.fleet.push_back({file.string(), main.m.get()});
        for (const auto& f : fl) {
          others.push_back(load(rule_dir.path() / f, v));
          opts.fleet.push_back({f, others.back().m.get()});
        }
      }
      auto findings = engine::run(*main.m, opts);
      auto expected = expectations(*main.cfg, rule);
      std::multiset<expectation> got_any, expected_any;
      std::string got_text;
      for (const auto& f : findings) {
        REQUIRE(f.rule == rule);
        got_any.insert({f.location.file, f.location.line, ""});
        got_text +=
            "\n  " + to_string(f.location) + " " + engine::to_string(f.level) + ": " + f.message;
        // A severity named in the expect comment must match.
        bool matched = false;
        for (const auto& e : expected)
          if (e.file == f.location.file && e.line == f.location.line &&
              (e.severity.empty() || e.severity == engine::to_string(f.level)))
            matched = true;
        CHECK_MESSAGE(matched, "unexpected finding:" << got_text);
      }
      for (const auto& e : expected) expected_any.insert({e.file, e.line, ""});
      CHECK_MESSAGE(got_any == expected_any,
                    "findings differ from expect comments; got:" << got_text);
      ++fixtures;
      expected_total += expected.size();
    }
  }
  MESSAGE("rule fixtures: " << fixtures << " files, " << expected_total << " expected findings");
  CHECK(fixtures >= 20);
}
