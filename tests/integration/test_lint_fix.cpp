// lint --fix on every fixture that has a mechanical fix: the diff applies with `patch -p1`,
// changes only the fixed directives, the patched config passes the real `nginx -t`, and a
// second lint finds nothing left to fix.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/fixture_env.hpp"
#include "support/nginx_run.hpp"
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
  return test::run_nginx(
      {"nginx", "-t", "-p", dir.string() + "/", "-c", conf.string(), "-g",
       "pid " + (dir / "t.pid").string() + "; error_log " + (dir / "t.log").string() + ";"});
}

}  // namespace

TEST_CASE("--fix diffs apply with patch -p1, pass nginx -t, and leave nothing fixable") {
  test::temp_dir tmp;
  fs::copy(test::source_dir() / "fixtures/rules", tmp.path() / "rules",
           fs::copy_options::recursive);
  std::size_t fixed_fixtures = 0;
  for (const auto& rule_dir : fs::directory_iterator(tmp.path() / "rules")) {
    const std::string rule = rule_dir.path().filename().string();
    test::make_fixture_material(rule_dir.path());
    for (const auto& e : fs::directory_iterator(rule_dir.path())) {
      const std::string name = e.path().filename().string();
      // NAME.fixed.conf is the expected result of a fix (test_rule_fixtures), not a fixture.
      if (e.path().extension() != ".conf" || name.find(".fixed.") != std::string::npos) continue;
      INFO("fixture " << rule << "/" << name);
      const std::string text = test::read_file(e.path());
      std::vector<std::string> args = {
          "lint",
          name,
          "--select",
          rule,
          "--nginx-version",
          header(text, "nginx-version:").empty() ? "1.22.1" : header(text, "nginx-version:")[0]};
      if (auto b = header(text, "baseline:"); !b.empty()) {
        args.push_back("--baseline");
        args.push_back(b[0]);
      }
      auto diff = ngxtls_in(rule_dir.path(), [&] {
        auto a = args;
        a.push_back("--fix");
        return a;
      }());
      REQUIRE(diff.exit_code != 2);
      if (diff.out.empty()) continue;  // nothing mechanical to fix here
      ++fixed_fixtures;
      // Apply to a fresh copy of the rule folder with patch -p1.
      const fs::path work = tmp.path() / "patched" / rule / name;
      fs::create_directories(work.parent_path());
      fs::copy(rule_dir.path(), work, fs::copy_options::recursive);
      auto patch =
          test::run({"patch", "-p1", "-d", work.string(), "--no-backup-if-mismatch"}, diff.out);
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
      auto again = ngxtls_in(work, [&] {
        auto a = args;
        a.push_back("--format");
        a.push_back("json");
        return a;
      }());
      auto again_diff = ngxtls_in(work, [&] {
        auto a = args;
        a.push_back("--fix");
        return a;
      }());
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

namespace {

// The config on one line: comments dropped (outside quotes), lines joined with a space. A
// minified config puts a directive and the braces that close its blocks on one line.
std::string one_line(const std::string& text) {
  std::string out;
  char quote = 0;
  bool comment = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (comment) {
      if (c == '\n') {
        comment = false;
        out += ' ';
      }
      continue;
    }
    if (quote) {
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    if (c == '#') {
      comment = true;
      continue;
    }
    out += c == '\n' ? ' ' : c;
  }
  return out + "\n";
}

}  // namespace

TEST_CASE(
    "--fix=write on every fixable fixture, as written and on one line, gives a config nginx -t "
    "accepts") {
  test::temp_dir tmp;
  fs::copy(test::source_dir() / "fixtures/rules", tmp.path() / "rules",
           fs::copy_options::recursive);
  std::size_t written = 0, one_line_written = 0;
  for (const auto& rule_dir : fs::directory_iterator(tmp.path() / "rules")) {
    const std::string rule = rule_dir.path().filename().string();
    test::make_fixture_material(rule_dir.path());
    for (const auto& e : fs::directory_iterator(rule_dir.path())) {
      if (e.path().extension() != ".conf" ||
          e.path().filename().string().rfind("nginx-t-", 0) == 0 ||
          e.path().filename().string().find(".fixed.") != std::string::npos)
        continue;
      const std::string name = e.path().filename().string();
      const std::string text = test::read_file(e.path());
      for (const bool squeeze : {false, true}) {
        INFO("fixture " << rule << "/" << name << std::string(squeeze ? " on one line" : ""));
        const fs::path work = tmp.path() / (squeeze ? "one-line" : "written") / rule;
        if (!fs::exists(work)) {
          fs::create_directories(work.parent_path());
          fs::copy(rule_dir.path(), work, fs::copy_options::recursive);
        }
        const std::string before = squeeze ? one_line(text) : text;
        std::ofstream(work / name, std::ios::trunc | std::ios::binary) << before;
        std::vector<std::string> args = {
            "lint",
            name,
            "--select",
            rule,
            "--nginx-version",
            header(text, "nginx-version:").empty() ? "1.22.1" : header(text, "nginx-version:")[0]};
        if (auto b = header(text, "baseline:"); !b.empty()) {
          args.push_back("--baseline");
          args.push_back(b[0]);
        }
        auto w = ngxtls_in(work, [&] {
          auto a = args;
          a.push_back("--fix=write");
          return a;
        }());
        CAPTURE(w.err);
        REQUIRE(w.exit_code != 2);
        const std::string after = test::read_file(work / name);
        if (after == before) continue;
        ++(squeeze ? one_line_written : written);
        CAPTURE(after);
        // The written file parses, and has nothing fixable left.
        auto again = ngxtls_in(work, [&] {
          auto a = args;
          a.push_back("--fix");
          return a;
        }());
        CHECK(again.exit_code != 2);
        CHECK_MESSAGE(again.out.empty(), again.out);
        // The real nginx accepts it: a directive written into the wrong block is an [emerg].
        const fs::path variant = work / ("nginx-t-" + name);
        std::ofstream(variant) << nginx_t_variant(after);
        auto t = nginx_t(variant);
        CHECK_MESSAGE(t.exit_code == 0, t.err);
      }
    }
  }
  MESSAGE("fixtures fixed in place: " << written << ", on one line: " << one_line_written);
  CHECK(written >= 8);
  CHECK(one_line_written >= 8);
}

TEST_CASE(
    "--fix=write on a one-line http { server { ... } } keeps the new directive in the server "
    "block") {
  test::temp_dir tmp;
  const std::string conf =
      "events {} http { server { listen 443 ssl; ssl_protocols TLSv1.3; ssl_session_tickets off; } "
      "}\n";
  std::ofstream(tmp.path() / "n.conf") << conf;
  auto w = ngxtls_in(tmp.path(), {"lint", "n.conf", "--nginx-version", "1.22.1", "--fix=write"});
  CAPTURE(w.err);
  REQUIRE(w.exit_code != 2);
  const std::string after = test::read_file(tmp.path() / "n.conf");
  CAPTURE(after);
  // ssl_session_cache lands after ssl_session_tickets, before the braces that close server and
  // http.
  const auto cache = after.find("ssl_session_cache shared:");
  REQUIRE(cache != std::string::npos);
  CHECK(after.find("ssl_session_tickets off;") < cache);
  CHECK(after.find("} }", cache) != std::string::npos);
  auto p = ngxtls_in(tmp.path(), {"parse", "n.conf"});
  REQUIRE(p.exit_code == 0);
  const auto tree = json::parse(p.out)["directives"];
  // Main context: events and http only; the cache sits in http > server, after the tickets.
  REQUIRE(tree.size() == 2);
  CHECK(tree[1]["name"] == "http");
  REQUIRE(tree[1]["block"].size() == 1);
  const auto& server = tree[1]["block"][0];
  CHECK(server["name"] == "server");
  REQUIRE(server["block"].size() == 4);
  CHECK(server["block"][2]["name"] == "ssl_session_tickets");
  CHECK(server["block"][3]["name"] == "ssl_session_cache");
  test::make_fixture_material(tmp.path());
  std::ofstream(tmp.path() / "t.conf") << nginx_t_variant(after);
  auto t = nginx_t(tmp.path() / "t.conf");
  CHECK_MESSAGE(t.exit_code == 0, t.err);
}

TEST_CASE("--fix=write on an nginx -T dump writes nothing: the dump's paths name files here") {
  // A dump names its files by the dumped host's paths; its text need not be what those paths
  // hold here. A fix written back would replace the file at the path with the dump's text.
  test::temp_dir tmp;
  const std::string on_disk = "# the file on this machine, different from the dump's\n";
  const fs::path named = tmp.path() / "site.conf";
  std::ofstream(named) << on_disk;
  const std::string dump = "# configuration file " + named.string() +
                           ":\nevents {}\nhttp { server { listen 443 ssl; ssl_protocols TLSv1.3; "
                           "ssl_session_tickets off; ssl_certificate c.pem; "
                           "ssl_certificate_key k.pem; } }\n";
  std::ofstream(tmp.path() / "dump.txt") << dump;
  auto w = ngxtls_in(tmp.path(), {"lint", "dump.txt", "--nginx-version", "1.22.1", "--fix=write"});
  CHECK(w.exit_code == 2);
  CHECK(w.err.find("ngxtls: error: lint: --fix=write cannot write into an nginx -T dump "
                   "(dump.txt): its files are the dumped host's; use --fix to print a diff") !=
        std::string::npos);
  CHECK(test::read_file(named) == on_disk);
  CHECK(test::read_file(tmp.path() / "dump.txt") == dump);
  // The diff stays available: it is printed, not applied.
  auto d = ngxtls_in(tmp.path(), {"lint", "dump.txt", "--nginx-version", "1.22.1", "--fix"});
  CHECK(d.exit_code == 0);
  CHECK(d.out.find("+ssl_session_cache shared:") != std::string::npos);
  CHECK(test::read_file(named) == on_disk);
}
