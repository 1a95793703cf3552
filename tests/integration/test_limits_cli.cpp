// The limits of docs/limits.md at their default values, through the real binary: each hit is
// exit code 2 with one `ngxtls: error: FILE:LINE[:COL]: ...` line naming the limit, quickly,
// never a crash or a hang (tests/unit/test_limits.cpp covers every limit with lowered values).

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "support/process.hpp"

using namespace ngxtls;

namespace {

test::command_result lint(const std::string& conf, int timeout_s = 60) {
  return test::run(
      {test::ngxtls_binary(), "lint", conf, "--nginx-version", "1.22.1", "--fail-on", "never"}, "",
      timeout_s);
}

void expect_limit(const test::command_result& r, const std::string& where,
                  const std::string& text) {
  CAPTURE(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("ngxtls: error: " + where, 0) == 0);
  CHECK(r.err.find(text) != std::string::npos);
  CHECK(r.err.find("terminate called") == std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
}

}  // namespace

TEST_CASE(
    "default max_depth (256): a 100,000-deep nesting is a clear error, not a stack overflow") {
  test::temp_dir t;
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "a{";
  const auto conf = t.write("deep.conf", deep).string();
  expect_limit(lint(conf), conf + ":1:", "blocks nested deeper than the limit of 256 (max_depth)");
}

TEST_CASE("default max_include_depth (64): a chain of 100 includes is an error") {
  test::temp_dir t;
  const auto conf = t.write("nginx.conf", "include f1;\n").string();
  for (int i = 1; i < 100; ++i)
    t.write("f" + std::to_string(i), "include f" + std::to_string(i + 1) + ";\n");
  t.write("f100", "x;\n");
  expect_limit(lint(conf), (t.path() / "f63").string() + ":1:1: ",
               "includes nested deeper than the limit of 64 (max_include_depth)");
}

TEST_CASE("default max_args_per_directive (100000)") {
  test::temp_dir t;
  std::string names;
  names.reserve(100001 * 3);
  for (int i = 0; i <= 100000; ++i) names += " a";
  const auto conf =
      t.write("nginx.conf", "http {\n server {\n  server_name" + names + ";\n }\n}\n").string();
  expect_limit(lint(conf), conf + ":3:3: ",
               "directive \"server_name\" has 100001 arguments, more than the limit of 100000 "
               "(max_args_per_directive)");
}

TEST_CASE("argument length: nginx's \"too long parameter\" at 4096 bytes") {
  test::temp_dir t;
  const auto conf =
      t.write("nginx.conf", "events {}\nhttp { server_name " + std::string(10000, 'x') + "; }\n")
          .string();
  expect_limit(lint(conf), conf + ":2: ", "too long parameter \"xxxxxxxxxx...\" started");
}

TEST_CASE("a FIFO, a directory, a symlink loop and /dev/zero named by include: no hang") {
  test::temp_dir t;
  REQUIRE(::mkfifo((t.path() / "fifo.conf").c_str(), 0600) == 0);
  std::filesystem::create_directory(t.path() / "dir.conf");
  std::filesystem::create_symlink(t.path() / "l2.conf", t.path() / "l1.conf");
  std::filesystem::create_symlink(t.path() / "l1.conf", t.path() / "l2.conf");
  const auto started = std::chrono::steady_clock::now();
  auto conf = t.write("a.conf", "events {}\ninclude fifo.conf;\n").string();
  expect_limit(lint(conf, 20), conf + ":2:1: ", "fifo.conf\" is not a regular file");
  conf = t.write("b.conf", "include dir.conf;\n").string();
  expect_limit(lint(conf, 20), conf + ":1:1: ", "dir.conf\" failed (21: Is a directory)");
  conf = t.write("c.conf", "include l1.conf;\n").string();
  expect_limit(lint(conf, 20),
               conf + ":1:1: ", "l1.conf\" failed (40: Too many levels of symbolic links)");
  // The main path itself a FIFO.
  expect_limit(lint((t.path() / "fifo.conf").string(), 20), (t.path() / "fifo.conf").string(),
               "is not a regular file");
  // nginx reads a character device as an empty file (its st_size is 0): so do we.
  conf = t.write("d.conf", "include /dev/zero;\n").string();
  auto r = lint(conf, 20);
  CHECK(r.exit_code == 0);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));
}
