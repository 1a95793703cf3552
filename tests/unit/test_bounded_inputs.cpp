// Inputs are bounded while they are read: include bombs, globs over self-linked trees,
// standard input, files named by ssl_* directives, findings; and inputs whose cost grew
// faster than their size (unterminated Lua strings, large nginx -T dumps).

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>

#include "base/error.hpp"
#include "config/loader.hpp"
#include "engine/finding.hpp"
#include "support/process.hpp"
#include "tls/errors.hpp"
#include "tls/file_read.hpp"

namespace cfgns = ngxtls::config;
using ngxtls::input_error;
using ngxtls::test::temp_dir;

namespace {

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const input_error& e) {
    std::string out = e.what();
    for (const auto& c : e.include_chain()) out += "\n  included from " + to_string(c);
    return out;
  }
  return "no error";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// This thread's CPU time in seconds: unlike wall-clock time, it does not grow when other
/// processes share the cores (the work measured here runs on the calling thread).
double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// Best of three CPU times of f() on this thread, in seconds.
template <typename F>
double best_of_3(F&& f) {
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const double t0 = thread_cpu_seconds();
    f();
    best = std::min(best, thread_cpu_seconds() - t0);
  }
  return best;
}

}  // namespace

TEST_CASE("an include bomb stops at max_include_expansions and names the include chain") {
  temp_dir t;
  // f0 includes f1 twice, f1 includes f2 twice, ...: 2^30 expansions of f30.
  for (int k = 0; k < 30; ++k) {
    const std::string next = "f" + std::to_string(k + 1);
    t.write("f" + std::to_string(k), "include " + next + ";\ninclude " + next + ";\n");
  }
  t.write("f30", "x;\n");
  cfgns::load_options o;
  o.max_include_expansions = 1000;
  const std::string e = error_of([&] { cfgns::load_file((t.path() / "f0").string(), o); });
  CAPTURE(e);
  // The message names the limit, the include site and the chain from f0 down to it.
  CHECK(contains(e,
                 ": more than 1000 files expanded by includes, counting every include site "
                 "(max_include_expansions; an include bomb?)"));
  CHECK(contains(e, "\n  included from " + (t.path() / "f0").string() + ":1:1"));
  // The default limit: the same bomb fails too (about 1 s in a release build, 20 s under
  // ASan; the old code ran for minutes and took 10 GB). Speed is the growth tests' business:
  // this bound only keeps a regression from hanging the suite.
  const auto t0 = std::chrono::steady_clock::now();
  const std::string d = error_of([&] { cfgns::load_file((t.path() / "f0").string()); });
  CHECK(contains(d, "more than 1000000 files expanded by includes"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120));
}

TEST_CASE("an include expanded at every level is stored once: a bomb under the limit is cheap") {
  // 2^16 = 65,536 copies of f16's directive through 16 levels: under every limit. Each
  // directive is copied into storage once, not once per level above it, and a chain is a link.
  temp_dir t;
  for (int k = 0; k < 16; ++k) {
    const std::string next = "f" + std::to_string(k + 1);
    t.write("f" + std::to_string(k), "include " + next + ";\ninclude " + next + ";\n");
  }
  t.write("f16", "x;\n");
  const auto cfg = cfgns::load_file((t.path() / "f0").string());
  CHECK(cfg.root.size() == 65536);
  // One link per expansion: 2 + 4 + ... + 65,536 = 131,070, plus the empty chain.
  CHECK(cfg.chains.size() == 131071);
  // The last directive came through f0:2 (second include), f1:2, ..., f15:2.
  const auto chain = cfg.chain_of(cfg.root[65535]);
  REQUIRE(chain.size() == 16);
  CHECK(chain.front().file == (t.path() / "f0").string());
  CHECK(chain.front().line == 2);
  CHECK(chain.back().file == (t.path() / "f15").string());
}

TEST_CASE("a glob over self-linked directories stops at max_glob_entries, early") {
  temp_dir t;
  std::filesystem::create_directory(t.path() / "d");
  for (int i = 0; i < 12; ++i)
    std::filesystem::create_directory_symlink(".", t.path() / "d" / ("s" + std::to_string(i)));
  // glob() itself would list 12^6 (about 3 million) directories before anyone counts.
  const auto main = t.write("nginx.conf", "include d/*/*/*/*/*/*/*.conf;\n");
  cfgns::load_options o;
  o.max_glob_entries = 5000;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = error_of([&] { cfgns::load_file(main.string(), o); });
  CHECK(e == main.string() + ":1:1: include \"" + (t.path() / "d/*/*/*/*/*/*/*.conf").string() +
                 "\" reads more than 5000 directory entries looking for matches "
                 "(max_glob_entries)");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  // glob()'s results are kept: sorted, dot files only for an explicit dot, symlinks followed.
  t.write("g/b.conf", "b;\n");
  t.write("g/a.conf", "a;\n");
  t.write("g/.hidden.conf", "hidden;\n");
  t.write("g/sub/c.conf", "c;\n");
  const auto g = t.write("g.conf", "include g/*.conf;\ninclude g/*/c.conf;\ninclude g/.h*;\n");
  const auto cfg = cfgns::load_file(g.string());
  std::string names;
  for (const auto& d : cfg.root) names += std::string(d.name) + " ";
  CHECK(names == "a b c hidden ");
}

TEST_CASE("standard input is read with a cap, not whole") {
  std::signal(SIGPIPE, SIG_IGN);  // the writer below outlives the read end
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  // A writer that never stops: the reader must give up at the limit, not at the end.
  std::jthread writer([fd = fds[1]] {
    const std::string chunk(1 << 16, ' ');
    while (::write(fd, chunk.data(), chunk.size()) > 0) {
    }
    ::close(fd);
  });
  const std::string e =
      error_of([&] { cfgns::read_stream_bounded(fds[0], "<stdin>", std::size_t{1} << 20); });
  ::close(fds[0]);  // the writer's next write fails with EPIPE and it stops
  CHECK(e == "<stdin>: the input is larger than the limit of 1048576 bytes (max_file_bytes)");
  // Within the limit: every byte.
  int p2[2];
  REQUIRE(::pipe(p2) == 0);
  REQUIRE(::write(p2[1], "events {}\n", 10) == 10);
  ::close(p2[1]);
  CHECK(cfgns::read_stream_bounded(p2[0], "<stdin>", 10).bytes == "events {}\n");
  ::close(p2[0]);
}

TEST_CASE("standard input is read whole, from a pipe in many chunks or from a file at its offset") {
  std::signal(SIGPIPE, SIG_IGN);
  // 3 MiB and a few bytes through a pipe: many reads and several chunks, joined in order.
  std::string text;
  for (std::size_t i = 0; text.size() < (std::size_t{3} << 20) + 5; ++i)
    text += "server_name host" + std::to_string(i) + ".example;\n";
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::jthread writer([fd = fds[1], &text] {
    std::size_t at = 0;
    while (at < text.size()) {
      const ssize_t n =
          ::write(fd, text.data() + at, std::min<std::size_t>(4096, text.size() - at));
      if (n <= 0) break;
      at += static_cast<std::size_t>(n);
    }
    ::close(fd);
  });
  const cfgns::stored_text piped = cfgns::read_stream_bounded(fds[0], "<stdin>", 256u << 20);
  writer.join();
  ::close(fds[0]);
  CHECK(piped.bytes.size() == text.size());
  CHECK(piped.bytes == text);
  // A regular file on stdin is read from where its offset stands, to its end; the limit
  // counts those bytes only.
  temp_dir t;
  const auto path = t.write("stdin.conf", text);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::lseek(fd, 7, SEEK_SET) == 7);
  const cfgns::stored_text filed = cfgns::read_stream_bounded(fd, "<stdin>", text.size() - 7);
  CHECK(filed.bytes == std::string_view(text).substr(7));
  REQUIRE(::lseek(fd, 6, SEEK_SET) == 6);
  CHECK(error_of([&] { cfgns::read_stream_bounded(fd, "<stdin>", text.size() - 7); }) ==
        "<stdin>: the input is larger than the limit of " + std::to_string(text.size() - 7) +
            " bytes (max_file_bytes)");
  ::close(fd);
}

TEST_CASE("read_file_bounded refuses FIFOs, devices and files over the cap without blocking") {
  temp_dir t;
  REQUIRE(::mkfifo((t.path() / "fifo.pem").c_str(), 0600) == 0);
  const auto started = std::chrono::steady_clock::now();
  auto refused = [](const std::string& path, std::size_t max) -> std::string {
    try {
      ngxtls::tls::read_file_bounded(path, max);
    } catch (const ngxtls::tls::file_error& e) {
      return std::string(e.not_a_file() ? "refused: " : "error: ") + e.reason();
    }
    return "read";
  };
  CHECK(refused((t.path() / "fifo.pem").string(), 1000) == "refused: not a regular file (a FIFO)");
  CHECK(refused("/dev/zero", 1000) == "refused: not a regular file (a character device)");
  const auto big = t.write("big.pem", std::string(1001, 'x'));
  CHECK(refused(big.string(), 1000) == "refused: larger than the limit of 1000 bytes");
  CHECK(refused(big.string(), 1001) == "read");
  CHECK(refused((t.path() / "missing.pem").string(), 1000) == "error: No such file or directory");
  CHECK(ngxtls::tls::refused_file_reason((t.path() / "fifo.pem").string()) ==
        "not a regular file (a FIFO)");
  CHECK(ngxtls::tls::refused_file_reason(big.string()).empty());
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
}

TEST_CASE("finding_list keeps its cap and counts the rest") {
  ngxtls::engine::finding_list l(3);
  for (int i = 0; i < 10; ++i) {
    ngxtls::engine::finding f;
    f.rule = "r" + std::to_string(i);
    l.push_back(std::move(f));
  }
  CHECK(l.size() == 3);
  CHECK(l.dropped() == 7);
  CHECK(l[2].rule == "r2");
}

TEST_CASE("an unterminated Lua string is not rescanned from every quote: linear growth") {
  // Each line: one `"` and then `\"` pairs, never closed on the line. The module's lexer
  // reads the quote as an ordinary byte; every later quote on the line fails the same way.
  auto config_of = [](std::size_t quotes_per_line) {
    std::string body;
    std::string line = "  x = \"";
    for (std::size_t i = 0; i < quotes_per_line; ++i) line += "\\\"";
    line += "\n";
    for (int i = 0; i < 4000; ++i) body += line;
    return "http {\n server {\n  content_by_lua_block {\n" + body + "  }\n }\n}\n";
  };
  const std::string small = config_of(500), large = config_of(2000);
  auto parse = [](const std::string& text) {
    auto source = cfgns::make_memory_source({{"/n.conf", text}});
    const auto cfg = cfgns::load("/n.conf", *source);
    REQUIRE(cfg.root.size() == 1);
  };
  const double t_small = best_of_3([&] { parse(small); });
  const double t_large = best_of_3([&] { parse(large); });
  MESSAGE("Lua body " << small.size() << " bytes: " << t_small << " s; " << large.size()
                      << " bytes: " << t_large << " s");
  // 4x the input: linear is 4x, the old rescan 16x.
  CHECK(t_large < 6 * std::max(t_small, 0.002));
}

TEST_CASE("a large nginx -T dump splits in linear time") {
  // nginx -T's shape for a main file that includes sites/*.conf, each site including a
  // glob of snippets of its own: every file follows its marker, with one line feed after it.
  auto dump_of = [](int sites) {
    std::string main = "events {}\nhttp {\n    include /etc/nginx/sites/*.conf;\n}\n";
    std::string out = "# configuration file /etc/nginx/nginx.conf:\n" + main + "\n";
    std::vector<std::string> names;
    for (int i = 0; i < sites; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "s%06d", i);
      names.emplace_back(name);
    }
    for (const auto& n : names) {
      out += "# configuration file /etc/nginx/sites/" + n + ".conf:\n";
      out += "server {\n    listen 443 ssl;\n    server_name " + n +
             ".example;\n    include /etc/nginx/snippets/" + n + "/*.inc;\n}\n\n";
      out += "# configuration file /etc/nginx/snippets/" + n + "/tls.inc:\n";
      out += "ssl_session_tickets off;\n# a comment\n\n";
    }
    return out;
  };
  const std::string small = dump_of(1000), large = dump_of(4000);
  std::size_t servers = 0;
  auto load = [&](const std::string& d) {
    const auto cfg = cfgns::load_dump(d, "<dump>");
    servers = cfg.root[1].block.size();
  };
  const double t_small = best_of_3([&] { load(small); });
  CHECK(servers == 1000);
  const double t_large = best_of_3([&] { load(large); });
  CHECK(servers == 4000);
  MESSAGE("dump of 1,000 sites: " << t_small << " s; 4,000 sites: " << t_large << " s");
  CHECK(t_large < 6 * std::max(t_small, 0.002));
}
