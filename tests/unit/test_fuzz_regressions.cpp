// Inputs the fuzzer (tests/fuzz, scripts/fuzz.sh) once crashed on or timed out with, replayed
// through the same framing: each must load or raise input_error, nothing else.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "config/loader.hpp"
#include "fuzz/framing.hpp"
#include "support/process.hpp"

namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("every saved fuzzer finding loads or is an input_error") {
  const fs::path dir = ngxtls::test::source_dir() / "fixtures" / "fuzz-regressions";
  std::vector<fs::path> inputs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != "README.md") inputs.push_back(e.path());
  }
  REQUIRE_FALSE(inputs.empty());
  for (const auto& p : inputs) {
    INFO("input: " << p.string());
    // Any other exception escapes load_framed and fails here; a crash fails the test binary.
    CHECK_NOTHROW(ngxtls::fuzz::load_framed(read_bytes(p)));
  }
}

TEST_CASE("the framing splits an input at NUL bytes into the main file and three includes") {
  const auto files = ngxtls::fuzz::split_files(std::string("m;\0a;\0b;\0c;\0d;", 14));
  REQUIRE(files.size() == 4);
  CHECK(files.at("/etc/nginx/nginx.conf") == "m;");
  CHECK(files.at("/etc/nginx/a.conf") == "a;");
  CHECK(files.at("/etc/nginx/b.conf") == "b;");
  CHECK(files.at("/etc/nginx/sub/c.conf") == std::string("c;\0d;", 5));
}

TEST_CASE("include expansions of files without directives count toward max_directives") {
  // Each level includes the next twice and the last file is empty: no directive is ever
  // copied, yet 2^30 expansions would run for minutes (the fuzzer's first timeout).
  std::map<std::string, std::string> files{{"/etc/nginx/nginx.conf", "include l0;"}};
  for (int i = 0; i < 30; ++i) {
    const std::string next = "include l" + std::to_string(i + 1) + ";";
    files["/etc/nginx/l" + std::to_string(i)] = next + " " + next;
  }
  files["/etc/nginx/l30"] = "";
  ngxtls::config::load_options o;
  o.max_directives = 1000;
  auto source = ngxtls::config::make_memory_source(files);
  std::string message = "no error";
  try {
    ngxtls::config::load("/etc/nginx/nginx.conf", *source, o);
  } catch (const ngxtls::input_error& e) {
    message = e.what();
  }
  CHECK(message.find("more than 1000 directives after expanding includes (max_directives)") !=
        std::string::npos);
}

TEST_CASE("blocks nested across includes are bounded by max_depth, not by the stack") {
  // 64 files of 255 nested blocks, each including the next inside its innermost block: every
  // file is within the parser's limit, yet the expanded tree would nest 16,000 deep. The
  // second level of f1 is level 257 (f1 is parsed inside f0's 255 blocks).
  std::map<std::string, std::string> files;
  for (int i = 0; i < 64; ++i) {
    std::string s;
    for (int d = 0; d < 255; ++d) s += "a{";
    s += i == 63 ? "x;" : "include f" + std::to_string(i + 1) + ";";
    for (int d = 0; d < 255; ++d) s += "}";
    files["/etc/nginx/f" + std::to_string(i)] = s;
  }
  auto source = ngxtls::config::make_memory_source(files);
  std::string message = "no error";
  try {
    ngxtls::config::load("/etc/nginx/f0", *source);
  } catch (const ngxtls::input_error& e) {
    message = e.what();
  }
  CHECK(message.find("/etc/nginx/f1:1:4: blocks nested deeper than the limit of 256 (max_depth)") ==
        0);
}
