// The limits catalogue of docs/limits.md, one case per limit: each hit is an input_error that
// names the limit and points at file:line:col (the include site for limits on included files).
// Limits are lowered through load_options so that inputs stay small; the defaults are driven
// through the real binary in tests/integration/test_limits_cli.cpp.

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>

#include "base/error.hpp"
#include "config/loader.hpp"
#include "support/process.hpp"

namespace cfgns = ngxtls::config;
using ngxtls::input_error;
using ngxtls::test::temp_dir;

namespace {

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return "no error";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a file over max_file_bytes is an error at the include that names it") {
  temp_dir t;
  const auto main = t.write("nginx.conf", "events {}\ninclude big.conf;\n");
  t.write("big.conf", std::string(200, '#') + "\n");
  cfgns::load_options o;
  o.max_file_bytes = 100;
  const std::string e = error_of([&] { cfgns::load_file(main.string(), o); });
  CAPTURE(e);
  CHECK(e.rfind(main.string() + ":2:1: ", 0) == 0);
  CHECK(contains(e, "big.conf\" is larger than the limit of 100 bytes (max_file_bytes)"));
}

TEST_CASE("blocks nested deeper than max_depth are an error, across includes too") {
  temp_dir t;
  std::string deep;
  for (int i = 0; i < 10; ++i) deep += "a {\n";
  const auto main = t.write("nginx.conf", deep);
  cfgns::load_options o;
  o.max_depth = 5;
  std::string e = error_of([&] { cfgns::load_file(main.string(), o); });
  CAPTURE(e);
  CHECK(e.rfind(main.string() + ":6:", 0) == 0);
  CHECK(contains(e, "(max_depth)"));
  // Three levels here, three in the included file.
  const auto outer = t.write("outer.conf", "a { b { c { include inner.conf; } } }\n");
  t.write("inner.conf", "d { e { f { x; } } }\n");
  e = error_of([&] { cfgns::load_file(outer.string(), o); });
  CAPTURE(e);
  CHECK(contains(e, "inner.conf:1:"));
  CHECK(contains(e, "(max_depth)"));
}

TEST_CASE("includes nested deeper than max_include_depth are an error at the innermost include") {
  temp_dir t;
  const auto main = t.write("nginx.conf", "include f1;\n");
  for (int i = 1; i < 10; ++i)
    t.write("f" + std::to_string(i), "\n include f" + std::to_string(i + 1) + ";\n");
  t.write("f10", "x;\n");
  cfgns::load_options o;
  o.max_include_depth = 4;
  const std::string e = error_of([&] { cfgns::load_file(main.string(), o); });
  CAPTURE(e);
  CHECK(e.rfind((t.path() / "f3").string() + ":2:2: ", 0) == 0);
  CHECK(contains(e, "includes nested deeper than the limit of 4 (max_include_depth)"));
}

TEST_CASE("more distinct files than max_included_files is an error at the include") {
  temp_dir t;
  const auto main = t.write("nginx.conf", "include a.conf;\ninclude b.conf;\ninclude c.conf;\n");
  for (const char* n : {"a.conf", "b.conf", "c.conf"}) t.write(n, "x;\n");
  cfgns::load_options o;
  o.max_included_files = 3;  // the main file counts
  const std::string e = error_of([&] { cfgns::load_file(main.string(), o); });
  CAPTURE(e);
  CHECK(e.rfind(main.string() + ":3:1: ", 0) == 0);
  CHECK(contains(e, "more than 3 configuration files (max_included_files)"));
}

TEST_CASE("more than max_directives after expanding includes is an error") {
  temp_dir t;
  const auto main = t.write("nginx.conf", "include twice.conf;\ninclude twice.conf;\n");
  t.write("twice.conf", "a; b; c;\n");
  cfgns::load_options o;
  o.max_directives = 5;
  const std::string e = error_of([&] { cfgns::load_file(main.string(), o); });
  CAPTURE(e);
  CHECK(contains(e, "twice.conf:1:"));
  CHECK(contains(e, "more than 5 directives after expanding includes (max_directives)"));
}

TEST_CASE("max_directives counts the main file's blocks that hold no include, shared or not") {
  temp_dir t;
  cfgns::load_options o;
  o.max_directives = 5;
  // No include at all: the parser stops at the sixth directive (a0 ... a4 are five).
  const auto plain = t.write("plain.conf", "a0; a1; a2; a3; a4; a5; a6;\n");
  std::string e = error_of([&] { cfgns::load_file(plain.string(), o); });
  CAPTURE(e);
  CHECK(e.rfind(plain.string() + ":1:21: ", 0) == 0);
  CHECK(contains(e, "more than 5 directives after expanding includes (max_directives)"));
  // An include beside an include-free block: the block is shared by the expanded tree and
  // still counted (1 expansion + 1 http + b, c, d, e = 6).
  t.write("x.conf", "");
  const auto mixed = t.write("mixed.conf", "include x.conf;\nhttp { b; c; d; e; }\n");
  e = error_of([&] { cfgns::load_file(mixed.string(), o); });
  CAPTURE(e);
  CHECK(contains(e, "more than 5 directives after expanding includes (max_directives)"));
  o.max_directives = 6;
  CHECK(error_of([&] { cfgns::load_file(mixed.string(), o); }) == "no error");
}

TEST_CASE(
    "a directive with more than max_args_per_directive arguments is an error at the directive") {
  temp_dir t;
  std::string names;
  for (int i = 0; i < 20; ++i) names += " n" + std::to_string(i) + ".example";
  const auto main =
      t.write("nginx.conf", "http {\n  server {\n    server_name" + names + ";\n  }\n}\n");
  cfgns::load_options o;
  o.max_args_per_directive = 10;
  std::string e = error_of([&] { cfgns::load_file(main.string(), o); });
  CAPTURE(e);
  CHECK(e == main.string() +
                 ":3:5: directive \"server_name\" has 20 arguments, more than the limit of 10 "
                 "(max_args_per_directive)");
  o.max_args_per_directive = 20;
  CHECK(error_of([&] { cfgns::load_file(main.string(), o); }) == "no error");
  // In an included file, the error carries the include chain.
  const auto outer = t.write("outer.conf", "include nginx.conf;\n");
  o.max_args_per_directive = 10;
  try {
    cfgns::load_file(outer.string(), o);
    FAIL("no error");
  } catch (const input_error& err) {
    CHECK(ngxtls::to_string(err.where()) == main.string() + ":3:5");
    REQUIRE(err.include_chain().size() == 1);
    CHECK(ngxtls::to_string(err.include_chain()[0]) == outer.string() + ":1:1");
  }
}

TEST_CASE("an argument longer than nginx's 4096-byte buffer is nginx's \"too long parameter\"") {
  temp_dir t;
  const auto ok = t.write("ok.conf", "server_name " + std::string(4000, 'a') + ";\n");
  CHECK(error_of([&] { cfgns::load_file(ok.string()); }) == "no error");
  const auto main = t.write("nginx.conf", "\nserver_name " + std::string(5000, 'a') + ";\n");
  std::string e = error_of([&] { cfgns::load_file(main.string()); });
  CAPTURE(e);
  // nginx reports this one at a line only, as here.
  CHECK(e == main.string() + ":2: too long parameter \"aaaaaaaaaa...\" started");
  const auto quoted = t.write("quoted.conf", "\nserver_name \"" + std::string(5000, 'a') + ";\n");
  e = error_of([&] { cfgns::load_file(quoted.string()); });
  CAPTURE(e);
  CHECK(contains(e, "too long parameter, probably missing terminating \"\"\" character"));
}

TEST_CASE("a glob that matches more than max_glob_matches files is an error at the include") {
  temp_dir t;
  for (int i = 0; i < 12; ++i) t.write("conf.d/" + std::to_string(i) + ".conf", "x;\n");
  const auto main = t.write("nginx.conf", "http {\n    include conf.d/*.conf;\n}\n");
  cfgns::load_options o;
  o.max_glob_matches = 12;
  CHECK(error_of([&] { cfgns::load_file(main.string(), o); }) == "no error");
  o.max_glob_matches = 11;
  const std::string e = error_of([&] { cfgns::load_file(main.string(), o); });
  CAPTURE(e);
  CHECK(e == main.string() + ":2:5: include \"" + (t.path() / "conf.d/*.conf").string() +
                 "\" matches 12 files, more than the limit of 11 (max_glob_matches)");
}

TEST_CASE("an include through a symlink loop is ELOOP at the include, at once") {
  temp_dir t;
  std::filesystem::create_symlink(t.path() / "loop2.conf", t.path() / "loop1.conf");
  std::filesystem::create_symlink(t.path() / "loop1.conf", t.path() / "loop2.conf");
  const auto main = t.write("nginx.conf", "include loop1.conf;\n");
  const std::string e = error_of([&] { cfgns::load_file(main.string()); });
  CHECK(e == main.string() + ":1:1: open() \"" + (t.path() / "loop1.conf").string() +
                 "\" failed (40: Too many levels of symbolic links)");
  // A directory symlink loop under a glob: glob() lists names, it does not descend.
  std::filesystem::create_directory(t.path() / "d");
  std::filesystem::create_directory_symlink(t.path() / "d", t.path() / "d" / "self");
  const auto globbed = t.write("glob.conf", "include d/*/*/*/*;\n");
  const std::string g = error_of([&] { cfgns::load_file(globbed.string()); });
  CAPTURE(g);
  CHECK(contains(g, "pread()"));  // d/self/self/self/self is the directory d itself
  CHECK(contains(g, "(21: Is a directory)"));
}

TEST_CASE("special files in includes are refused or read as nginx reads them, never blocking") {
  temp_dir t;
  const auto started = std::chrono::steady_clock::now();
  // A FIFO with no writer: open() without O_NONBLOCK would block forever.
  REQUIRE(::mkfifo((t.path() / "fifo.conf").c_str(), 0600) == 0);
  auto main = t.write("fifo-main.conf", "events {}\ninclude fifo.conf;\n");
  std::string e = error_of([&] { cfgns::load_file(main.string()); });
  CHECK(e == main.string() + ":2:1: \"" + (t.path() / "fifo.conf").string() +
                 "\" is not a regular file");
  // A directory.
  std::filesystem::create_directory(t.path() / "dir.conf");
  main = t.write("dir-main.conf", "include dir.conf;\n");
  e = error_of([&] { cfgns::load_file(main.string()); });
  CHECK(e == main.string() + ":1:1: pread() \"" + (t.path() / "dir.conf").string() +
                 "\" failed (21: Is a directory)");
  // A Unix socket.
  const auto sock_path = t.path() / "sock.conf";
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(s >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(sock_path.string().size() < sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock_path.c_str());
  REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  main = t.write("sock-main.conf", "include sock.conf;\n");
  e = error_of([&] { cfgns::load_file(main.string()); });
  CHECK(e == main.string() + ":1:1: \"" + sock_path.string() + "\" is not a regular file");
  ::close(s);
  // Character devices have st_size 0, so nginx reads them as empty files (ngx_conf_parse
  // stops at st_size): /dev/null and even /dev/zero are empty includes, read without blocking.
  main = t.write("dev-main.conf", "include /dev/zero;\ninclude /dev/null;\nx;\n");
  auto cfg = cfgns::load_file(main.string());
  REQUIRE(cfg.root.size() == 1);
  CHECK(cfg.root[0].name == "x");
  // The main file itself named as a FIFO.
  e = error_of([&] { cfgns::load_file((t.path() / "fifo.conf").string()); });
  CHECK(contains(e, "is not a regular file"));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
}
