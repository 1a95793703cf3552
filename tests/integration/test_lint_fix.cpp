// lint --fix on every fixture that has a mechanical fix: the diff applies with `patch -p1`,
// changes only the fixed directives, the patched config passes the real `nginx -t`, and a
// second lint finds nothing left to fix.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/fixture_env.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using json = nlohmann::json;

namespace {

std::vector<std::string> header(const std::string& text, const std::string& key) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("# " + key, 0) == 0) {
      std::istringstream w(line.substr(2 + key.size()));
      std::string v;
      while (w >> v) out.push_back(v);
    }
  return out;
}

// Runs ngxtls with cwd = dir.
test::command_result ngxtls_in(const fs::path& dir, const std::vector<std::string>& args) {
  std::string cmd = "cd '" + dir.string() + "' && '" + test::ngxtls_binary() + "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  return test::run({"sh", "-c", cmd});
}

// A copy of the config that nginx -t can load: certificates for the ssl listens and the
// stream module when a stream block is present.
std::string nginx_t_variant(std::string text) {
  const std::string certs =
      "\n    ssl_certificate pki/noocsp/chain.pem;\n    ssl_certificate_key pki/noocsp/leaf.key;\n";
  for (const char* block : {"http {", "stream {"}) {
    auto p = text.find(block);
    if (p != std::string::npos && text.find("ssl_certificate ", p) == std::string::npos)
      text.insert(p + std::string(block).size(), certs);
  }
  if (text.find("stream {") != std::string::npos)
    text = "load_module /usr/lib/nginx/modules/ngx_stream_module.so;\n" + text;
  return text;
}

test::command_result nginx_t(const fs::path& conf) {
  const fs::path dir = conf.parent_path();
  return test::run({"nginx", "-t", "-p", dir.string() + "/", "-c", conf.string(), "-g",
                    "pid " + (dir / "t.pid").string() + "; error_log " + (dir / "t.log").string() + ";"});
}

}  // namespace

TEST_CASE("--fix diffs apply with patch -p1, pass nginx -t, and leave nothing fixable") {
  test::temp_dir tmp;
  fs::copy(test::source_dir() / "fixtures/rules", tmp.path() / "rules", fs::copy_options::recursive);
  std::size_t fixed_fixtures = 0;
  for (const auto& rule_dir : fs::directory_iterator(tmp.path() / "rules")) {
    const std::string rule = rule_dir.path().filename().string();
    test::make_fixture_material(rule_dir.path());
    for (const auto& e : fs::directory_iterator(rule_dir.path())) {
      if (e.path().extension() != ".conf") continue;
      const std::string name = e.path().filename().string();
      INFO("fixture " << rule << "/" << name);
      const std::string text = test::read_file(e.path());
      std::vector<std::string> args = {"lint", name, "--select", rule, "--nginx-version",
                                       header(text, "nginx-version:").empty() ? "1.22.1" : header(text, "nginx-version:")[0]};
      if (auto b = header(text, "baseline:"); !b.empty()) {
        args.push_back("--baseline");
        args.push_back(b[0]);
      }
      auto diff = ngxtls_in(rule_dir.path(), [&] { auto a = args; a.push_back("--fix"); return a; }());
      REQUIRE(diff.exit_code != 2);
      if (diff.out.empty()) continue;  // nothing mechanical to fix here
      ++fixed_fixtures;
      // Apply to a fresh copy of the rule folder with patch -p1.
      const fs::path work = tmp.path() / "patched" / rule / name;
      fs::create_directories(work.parent_path());
      fs::copy(rule_dir.path(), work, fs::copy_options::recursive);
      auto patch = test::run({"patch", "-p1", "-d", work.string(), "--no-backup-if-mismatch"}, diff.out);
      REQUIRE_MESSAGE(patch.exit_code == 0, patch.out << patch.err << "\n" << diff.out);
      // Only the fixed directives' lines change: every removed line names one of them.
      std::istringstream lines(diff.out);
      std::string l;
      while (std::getline(lines, l))
        if (l.size() > 1 && l[0] == '-' && l.rfind("---", 0) != 0)
          CHECK_MESSAGE((l.find("ssl_stapling on") != std::string::npos ||
                         l.find("ssl_session_cache") != std::string::npos ||
                         l.find("\xEF\xBB\xBF") != std::string::npos),
                        "unexpected removed line: " << l);
      // Nothing fixable is left.
      auto again = ngxtls_in(work, [&] { auto a = args; a.push_back("--format"); a.push_back("json"); return a; }());
      auto again_diff = ngxtls_in(work, [&] { auto a = args; a.push_back("--fix"); return a; }());
      CHECK_MESSAGE(again_diff.out.empty(), again_diff.out);
      for (const auto& f : json::parse(again.out)["findings"])
        CHECK_MESSAGE(f["severity"] != "error", f["message"]);
      // The real nginx accepts the patched config.
      const fs::path variant = work / ("nginx-t-" + name);
      std::ofstream(variant) << nginx_t_variant(test::read_file(work / name));
      auto t = nginx_t(variant);
      CHECK_MESSAGE(t.exit_code == 0, t.err);
    }
  }
  MESSAGE("fixtures with a mechanical fix: " << fixed_fixtures);
  CHECK(fixed_fixtures >= 8);
}
