// `cmake --install`: the binary, the man page and shell completions generated from the CLI's
// own help, and the rule documentation.

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;

namespace {

// Every long option that `ngxtls SUB --help` lists, read here independently of the generator.
std::set<std::string> long_options(const std::string& sub) {
  auto r = test::run({test::ngxtls_binary(), sub, "--help"}, "", 30);
  REQUIRE(r.exit_code == 0);
  std::set<std::string> out;
  static const std::regex opt(R"(^  (?:-\w,)?(--[A-Za-z0-9.-]+))");
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, opt) && m[1] != "--help") out.insert(m[1]);
  }
  return out;
}

}  // namespace

TEST_CASE("cmake --install puts the binary, man page, completions and rule docs in place") {
  const fs::path build = fs::path(test::ngxtls_binary()).parent_path();
  if (!fs::exists(build / "cli-docs" / "ngxtls.1"))
    return test::skip_test("this build made no man page (python3 was not found at configure time)");
  test::temp_dir dest;
  auto r = test::run({"/usr/bin/env", "DESTDIR=" + dest.path().string(), "cmake", "--install",
                      build.string(), "--prefix", "/usr"},
                     "", 120);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const fs::path usr = dest.path() / "usr";
  CHECK(fs::exists(usr / "bin/ngxtls"));
  auto v = test::run({(usr / "bin/ngxtls").string(), "--version"}, "", 30);
  CHECK(v.exit_code == 0);
  // ngxtls serve's unit names the binary and the config where this prefix puts them.
  const std::string unit = test::read_file(usr / "lib/systemd/system/ngxtls-serve.service");
  CHECK(unit.find("\nExecStart=/usr/bin/ngxtls serve --config /etc/ngxtls/serve.toml\n") !=
        std::string::npos);
  CHECK(fs::exists(dest.path() / "etc/ngxtls/serve.toml"));
  const std::string man = test::read_file(usr / "share/man/man1/ngxtls.1");
  const std::string bash = test::read_file(usr / "share/bash-completion/completions/ngxtls");
  const std::string zsh = test::read_file(usr / "share/zsh/vendor-completions/_ngxtls");
  const std::string fish = test::read_file(usr / "share/fish/vendor_completions.d/ngxtls.fish");
  for (const std::string sub : {"lint", "parse", "probe", "rules", "harden", "check", "serve"}) {
    CAPTURE(sub);
    CHECK(man.find(".SS " + sub + "\n") != std::string::npos);
    for (const auto& o : long_options(sub)) {
      CAPTURE(o);
      // roff writes each '-' as '\-'.
      CHECK(man.find(std::regex_replace(o, std::regex("-"), "\\-")) != std::string::npos);
      CHECK(bash.find(o) != std::string::npos);
      CHECK(zsh.find("'" + o + "[") != std::string::npos);
      CHECK(fish.find(" -l " + o.substr(2)) != std::string::npos);
    }
  }
  // One page per rule, as `ngxtls rules` lists them.
  auto rules = test::run({test::ngxtls_binary(), "rules"}, "", 30);
  REQUIRE(rules.exit_code == 0);
  std::istringstream in(rules.out);
  int pages = 0;
  for (std::string line; std::getline(in, line);) {
    const std::string id = line.substr(0, line.find(' '));
    if (id.empty() || !std::regex_match(id, std::regex("[a-z0-9-]+"))) continue;
    CAPTURE(id);
    CHECK(fs::exists(usr / "share/doc/ngxtls/rules" / (id + ".md")));
    ++pages;
  }
  CHECK(pages >= 25);
}

TEST_CASE("the generated bash completion completes subcommands, options and option values") {
  const fs::path script = fs::path(test::ngxtls_binary()).parent_path() / "cli-docs/ngxtls.bash";
  if (!fs::exists(script))
    return test::skip_test("this build made no completions (python3 was not found)");
  auto complete = [&](const std::string& words, int cword) {
    auto r = test::run({"/bin/bash", "-c",
                        "source \"$0\"; COMP_WORDS=(" + words + "); COMP_CWORD=" +
                            std::to_string(cword) + "; _ngxtls; printf '%s\\n' \"${COMPREPLY[@]}\"",
                        script.string()},
                       "", 30);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return r.out;
  };
  CHECK(complete("ngxtls ch", 1) == "check\n");
  CHECK(complete("ngxtls lint --fail", 2) == "--fail-on\n");
  CHECK(complete("ngxtls lint --format ''", 3) ==
        "text\njson\nsarif\ngithub\ngitlab\njunit\ncheckstyle\n");
  CHECK(complete("ngxtls probe --sess", 2) == "--sess-in\n--sess-out\n");
}

TEST_CASE("building the ngxtls target alone makes everything cmake --install installs") {
  // README's build (scripts/build.sh ngxtls) builds one target: the man page and completions
  // must come with it, or `cmake --install` fails on a missing file.
  const fs::path build = fs::path(test::ngxtls_binary()).parent_path();
  if (!fs::exists(build / "build.ninja")) return test::skip_test("not a Ninja build");
  auto r = test::run({"ninja", "-C", build.string(), "-t", "commands", "ngxtls"}, "", 60);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("write_completions.cmake") != std::string::npos);
  CHECK(r.out.find("gen_cli_docs.py") != std::string::npos);
  for (const char* f : {"ngxtls.1", "ngxtls.bash", "_ngxtls", "ngxtls.fish"}) {
    CAPTURE(f);
    CHECK(fs::exists(build / "cli-docs" / f));
  }
}
