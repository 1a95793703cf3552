// Loading whole configurations: includes, `nginx -T` dumps, limits and bad input.

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "config/loader.hpp"
#include "config/read_ahead.hpp"
#include "support/process.hpp"

namespace cfgns = ngxtls::config;
using ngxtls::input_error;
using ngxtls::test::temp_dir;

namespace {

cfgns::config load_mem(std::map<std::string, std::string> files,
                       const std::string& main = "/etc/nginx/nginx.conf",
                       const cfgns::load_options& o = {}) {
  auto src = cfgns::make_memory_source(std::move(files));
  return cfgns::load(main, *src, o);
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("include paths resolve against the conf prefix, not the including file's directory") {
  auto cfg = load_mem({{"/etc/nginx/nginx.conf", "http { include conf.d/a.conf; }"},
                       {"/etc/nginx/conf.d/a.conf", "include snippets/b.conf;"},
                       {"/etc/nginx/snippets/b.conf", "server_tokens off;"}});
  CHECK(cfg.conf_prefix == "/etc/nginx");
  REQUIRE(cfg.root.size() == 1);
  REQUIRE(cfg.root[0].block.size() == 1);
  const auto& d = cfg.root[0].block[0];
  CHECK(d.name == "server_tokens");
  CHECK(cfg.files[d.file].path == "/etc/nginx/snippets/b.conf");
  const auto chain = cfg.chain_of(d);
  REQUIRE(chain.size() == 2);
  CHECK(chain[0].file == "/etc/nginx/nginx.conf");
  CHECK(chain[0].line == 1);
  CHECK(chain[0].column == 8);
  CHECK(chain[1].file == "/etc/nginx/conf.d/a.conf");
  // The per-file tree keeps the include and names the file it brought in.
  const auto& inc = cfg.files[0].includes.at(&cfg.files[0].parsed[0].block[0]);
  REQUIRE(inc.size() == 1);
  CHECK(cfg.files[inc[0]].path == "/etc/nginx/conf.d/a.conf");
}

TEST_CASE("a quoted include path is unquoted before it is opened (A12)") {
  auto cfg = load_mem({{"/etc/nginx/nginx.conf", "http { include \"site.conf\"; }"},
                       {"/etc/nginx/site.conf", "server { server_name example.com; }"}});
  CHECK(cfg.root[0].block[0].name == "server");
}

TEST_CASE(
    "globs are sorted, a glob without match is fine, a missing literal file is an error (A05)") {
  auto cfg = load_mem({{"/etc/nginx/nginx.conf", "include d/*.conf; include none/*.conf;"},
                       {"/etc/nginx/d/b.conf", "b;"},
                       {"/etc/nginx/d/a.conf", "a;"},
                       {"/etc/nginx/d/c.txt", "c;"}});
  REQUIRE(cfg.root.size() == 2);
  CHECK(cfg.root[0].name == "a");
  CHECK(cfg.root[1].name == "b");
  CHECK(error_of([] {
          load_mem({{"/etc/nginx/nginx.conf", "\n\ninclude missing.conf;"}});
        }) ==
        "/etc/nginx/nginx.conf:3:1: open() \"/etc/nginx/missing.conf\" failed (2: No such file or "
        "directory)");
}

TEST_CASE("a file included from two places is expanded at both sites (A22)") {
  auto cfg = load_mem({{"/etc/nginx/nginx.conf",
                        "server { listen 8443 ssl; include tls.conf; }\nserver { listen 8444 ssl; "
                        "include tls.conf; }"},
                       {"/etc/nginx/tls.conf", "ssl_protocols TLSv1.3;"}});
  REQUIRE(cfg.files.size() == 2);  // read once
  REQUIRE(cfg.root.size() == 2);
  for (const auto& s : cfg.root) {
    REQUIRE(s.block.size() == 2);
    CHECK(s.block[1].name == "ssl_protocols");
  }
  CHECK(cfg.root[0].block[1].chain != cfg.root[1].block[1].chain);
  CHECK(cfg.chain_of(cfg.root[1].block[1])[0].line == 2);
}

TEST_CASE("an include cycle is an error that lists the active includes (A21)") {
  const auto e = error_of([] {
    load_mem({{"/etc/nginx/nginx.conf", "http {\n include a.conf;\n}"},
              {"/etc/nginx/a.conf", "include b.conf;"},
              {"/etc/nginx/b.conf", "include a.conf;"}});
  });
  CHECK(e.find("include cycle") != std::string::npos);
  CHECK(e.find("/etc/nginx/nginx.conf:2:2 -> /etc/nginx/a.conf:1:1 -> /etc/nginx/b.conf:1:1") !=
        std::string::npos);
  CHECK(error_of([] {
          load_mem({{"/etc/nginx/nginx.conf", "include nginx.conf;"}});
        }).find("include cycle") != std::string::npos);
}

TEST_CASE("--single-file does not follow includes") {
  cfgns::load_options o;
  o.single_file = true;
  auto cfg =
      load_mem({{"/etc/nginx/nginx.conf", "include missing.conf;"}}, "/etc/nginx/nginx.conf", o);
  REQUIRE(cfg.root.size() == 1);
  CHECK(cfg.root[0].name == "include");
}

TEST_CASE("a syntax error in an included file carries its include chain") {
  try {
    load_mem(
        {{"/etc/nginx/nginx.conf", "http {\n include a.conf;\n}"}, {"/etc/nginx/a.conf", "x {"}});
    FAIL("no error");
  } catch (const input_error& e) {
    CHECK(std::string(e.what()) ==
          "/etc/nginx/a.conf:1:4: unexpected end of file, expecting \"}\"");
    REQUIRE(e.include_chain().size() == 1);
    CHECK(ngxtls::to_string(e.include_chain()[0]) == "/etc/nginx/nginx.conf:2:2");
  }
}

TEST_CASE("an included file is checked in the context of its include site") {
  // Inside map, a file holds key-value lines: `server 1;` is a key, a block is an error.
  auto cfg = load_mem({{"/etc/nginx/nginx.conf", "map $a $b { include m.conf; }"},
                       {"/etc/nginx/m.conf", "server 1;\nhttp 2;"}});
  CHECK(cfg.root[0].block.size() == 2);
  CHECK(error_of([] {
          load_mem({{"/etc/nginx/nginx.conf", "map $a $b { include m.conf; }"},
                    {"/etc/nginx/m.conf", "x {}"}});
        }).find("/etc/nginx/m.conf:1:3: unexpected \"{\"") == 0);
}

TEST_CASE("limits are errors that name the limit") {
  cfgns::load_options o;
  o.max_include_depth = 3;
  CHECK(error_of([&] {
          load_mem({{"/etc/nginx/nginx.conf", "include a;"},
                    {"/etc/nginx/a", "include b;"},
                    {"/etc/nginx/b", "include c;"},
                    {"/etc/nginx/c", "include d;"},
                    {"/etc/nginx/d", "x;"}},
                   "/etc/nginx/nginx.conf", o);
        }).find("(max_include_depth)") != std::string::npos);
  cfgns::load_options o2;
  o2.max_directives = 100;
  // Each level includes the next twice: 2^12 copies of one directive.
  std::map<std::string, std::string> files{{"/etc/nginx/nginx.conf", "include l0;"}};
  for (int i = 0; i < 12; ++i) {
    files["/etc/nginx/l" + std::to_string(i)] =
        "include l" + std::to_string(i + 1) + "; include l" + std::to_string(i + 1) + ";";
  }
  files["/etc/nginx/l12"] = "x;";
  CHECK(error_of([&] { load_mem(files, "/etc/nginx/nginx.conf", o2); }).find("(max_directives)") !=
        std::string::npos);
  cfgns::load_options o3;
  o3.max_file_bytes = 10;
  CHECK(error_of([&] {
          load_mem({{"/etc/nginx/nginx.conf", "worker_processes 4;"}}, "/etc/nginx/nginx.conf", o3);
        }).find("(max_file_bytes)") != std::string::npos);
  cfgns::load_options o4;
  o4.max_included_files = 2;
  CHECK(error_of([&] {
          load_mem({{"/etc/nginx/nginx.conf", "include a; include b;"},
                    {"/etc/nginx/a", ""},
                    {"/etc/nginx/b", ""}},
                   "/etc/nginx/nginx.conf", o4);
        }).find("(max_included_files)") != std::string::npos);
}

TEST_CASE("an nginx -T dump is split at its markers and includes expand from it") {
  const std::string dump =
      "# configuration file /etc/nginx/nginx.conf:\n"
      "http {\n    include /etc/nginx/conf.d/*.conf;\n}\n\n"
      "# configuration file /etc/nginx/conf.d/a.conf:\n"
      "server {\n    listen 443 ssl;\n"
      "# configuration file /etc/nginx/other/zz.conf:\n"  // marker-like line, no include names it
      "}\n\n";
  CHECK(cfgns::looks_like_dump(dump));
  CHECK(cfgns::looks_like_dump("nginx: the configuration file /x syntax is ok\n" + dump));
  CHECK_FALSE(cfgns::looks_like_dump("http {}\n" + dump));
  auto cfg = cfgns::load_dump(dump, "<stdin>");
  REQUIRE(cfg.files.size() == 2);
  CHECK(cfg.files[0].path == "/etc/nginx/nginx.conf");
  CHECK(cfg.files[1].content ==
        "server {\n    listen 443 ssl;\n# configuration file /etc/nginx/other/zz.conf:\n}\n");
  CHECK(cfg.conf_prefix == "/etc/nginx");
  REQUIRE(cfg.root[0].block.size() == 1);
  CHECK(cfg.root[0].block[0].name == "server");
  CHECK(cfg.root[0].block[0].line == 1);
  CHECK(error_of([] {
          cfgns::load_dump("http {}\n", "dump.txt");
        }).find("dump.txt: not an nginx -T dump") == 0);
}

TEST_CASE("a dump's files are views into the dump's one buffer, not copies of it") {
  // Each file's bytes sit where the dump holds them: the second file starts right after the
  // first one, its line feed and the second marker line.
  const std::string first = "http {\n    include /etc/nginx/site.conf;\n}\n";
  const std::string marker = "# configuration file /etc/nginx/site.conf:\n";
  const std::string dump = "# configuration file /etc/nginx/nginx.conf:\n" + first + "\n" + marker +
                           "server {\n    listen 443 ssl;\n}\n\n";
  for (const bool from_file : {false, true}) {
    CAPTURE(from_file);
    temp_dir t;
    const cfgns::config cfg = from_file ? cfgns::load_file(t.write("dump.txt", dump).string())
                                        : cfgns::load_dump(dump, "<stdin>");
    REQUIRE(cfg.files.size() == 2);
    CHECK(cfg.from_dump);
    CHECK(cfg.files[0].content == first);
    CHECK(cfg.files[1].content == "server {\n    listen 443 ssl;\n}\n");
    CHECK(cfg.files[1].content.data() ==
          cfg.files[0].content.data() + first.size() + 1 + marker.size());
  }
}

TEST_CASE("bad input on disk is a clear error or a correct result, never a crash or hang") {
  temp_dir t;
  const auto dir = t.path().string();
  // Empty file: no directives.
  CHECK(cfgns::load_file(t.write("empty.conf", "").string()).root.empty());
  // /dev/null reads as empty, as nginx reads it.
  CHECK(cfgns::load_file("/dev/null").root.empty());
  // A procfs file has st_size 0 and nginx reads st_size bytes: empty, whatever the kernel
  // would hand a read past it (this process's environment and command line are never
  // empty). Parsed, their bytes would be printed in findings and errors.
  for (const std::string proc : {"/proc/self/environ", "/proc/self/cmdline"}) {
    CHECK(error_of([&] {
            CHECK(cfgns::load_file(t.write("proc.conf", "include " + proc + ";\n").string())
                      .root.empty());
            CHECK(cfgns::load_file(proc).root.empty());
          }) == "no error");
  }
  // A directory.
  CHECK(error_of([&] { cfgns::load_file(dir); }) ==
        dir + ": pread() \"" + dir + "\" failed (21: Is a directory)");
  // A missing file.
  CHECK(error_of([&] { cfgns::load_file(dir + "/nope.conf"); }) ==
        dir + "/nope.conf: open() \"" + dir + "/nope.conf\" failed (2: No such file or directory)");
  // A binary file: a syntax error, not a crash.
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary += static_cast<char>((i * 7919) & 0xff);
  CHECK(error_of([&] { cfgns::load_file(t.write("bin.conf", binary).string()); }) != "no error");
  // A FIFO named by an include: refused, never opened for a blocking read.
  const auto fifo = t.path() / "fifo.conf";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto main = t.write("main.conf", "include fifo.conf;");
  CHECK(error_of([&] { cfgns::load_file(main.string()); }).find("is not a regular file") !=
        std::string::npos);
  CHECK(error_of([&] { cfgns::load_file(fifo.string()); }).find("is not a regular file") !=
        std::string::npos);
  // A symlink loop.
  std::filesystem::create_symlink(t.path() / "loop2", t.path() / "loop1");
  std::filesystem::create_symlink(t.path() / "loop1", t.path() / "loop2");
  CHECK(error_of([&] {
          cfgns::load_file(dir + "/loop1");
        }).find("(40: Too many levels of symbolic links)") != std::string::npos);
  // A file that cannot be read: tests run as root, so use a path whose open fails anyway.
  CHECK(error_of([&] { cfgns::load_file(dir + "/empty.conf/x"); }).find("(20: Not a directory)") !=
        std::string::npos);
  const auto locked = t.write("locked.conf", "x;");
  ::chmod(locked.c_str(), 0);
  if (::access(locked.c_str(), R_OK) != 0) {
    CHECK(error_of([&] { cfgns::load_file(locked.string()); }).find("(13: Permission denied)") !=
          std::string::npos);
  }
  // A self-include on disk.
  const auto self = t.write("self.conf", "include self.conf;");
  CHECK(error_of([&] { cfgns::load_file(self.string()); }).find("include cycle") !=
        std::string::npos);
}

TEST_CASE("a 100 MB file parses in one pass, and the size limit names itself") {
  temp_dir t;
  std::string big;
  big.reserve(100u << 20);
  const std::string line = "    add_header X-Frame-Options \"SAMEORIGIN\" always; # comment\n";
  big += "http {\n";
  while (big.size() < (100u << 20)) big += line;
  big += "}\n";
  const auto p = t.write("big.conf", big);
  auto cfg = cfgns::load_file(p.string());
  REQUIRE(cfg.root.size() == 1);
  CHECK(cfg.root[0].block.size() == (big.size() - 9) / line.size());
  cfgns::load_options o;
  o.max_file_bytes = 1u << 20;
  CHECK(error_of([&] { cfgns::load_file(p.string(), o); }).find("(max_file_bytes)") !=
        std::string::npos);
}

TEST_CASE("argument_positions gives each argument's line and column in one pass") {
  auto cfg = load_mem(
      {{"/etc/nginx/nginx.conf", "events {}\n  server_name a\tbb\n   \"c d\" # note\n e;\n"}},
      "/etc/nginx/nginx.conf");
  REQUIRE(cfg.root.size() == 2);
  const auto& d = cfg.root[1];
  CHECK(d.line == 2);
  CHECK(d.column == 3);
  const auto pos = cfg.argument_positions(d);
  REQUIRE(pos.size() == 4);
  // a at 2:15, bb after the tab at 2:17, "c d" at 3:4, e at 4:2
  CHECK(pos[0].line == 2);
  CHECK(pos[0].column == 15);
  CHECK(pos[1].line == 2);
  CHECK(pos[1].column == 17);
  CHECK(pos[2].line == 3);
  CHECK(pos[2].column == 4);
  CHECK(pos[3].line == 4);
  CHECK(pos[3].column == 2);
  for (std::size_t i = 0; i < pos.size(); ++i) {
    CHECK(cfg.where(d, d.args[i]).line == pos[i].line);
    CHECK(cfg.where(d, d.args[i]).column == pos[i].column);
  }
}

TEST_CASE("a block without includes is shared with its file's first expansion, copied by later") {
  // s.conf is included twice: both expansions carry their own include chain, down to the
  // directives inside its blocks; the first takes the file's own records (no second copy of a
  // site file's blocks), the second copies them.
  auto cfg = load_mem(
      {{"/etc/nginx/nginx.conf", "http {\n  include s.conf;\n  server { include s.conf; }\n}\n"},
       {"/etc/nginx/s.conf", "location / { root /srv; }\n"}});
  REQUIRE(cfg.files.size() == 2);
  REQUIRE(cfg.chains.size() == 3);
  const auto& http = cfg.root[0];
  REQUIRE(http.block.size() == 2);
  const auto& first = http.block[0];            // the location, reached through line 2
  const auto& second = http.block[1].block[0];  // the same location, through line 3
  CHECK(first.name == "location");
  CHECK(second.name == "location");
  const std::uint32_t first_chain = first.chain;
  const std::uint32_t second_chain = second.chain;
  CHECK(first_chain != 0);
  CHECK(second_chain != 0);
  CHECK(first_chain != second_chain);
  CHECK(cfg.chain_frames(first_chain).back().line == 2);
  CHECK(cfg.chain_frames(second_chain).back().line == 3);
  REQUIRE(first.block.size() == 1);
  REQUIRE(second.block.size() == 1);
  CHECK(first.block[0].chain == first_chain);
  CHECK(second.block[0].chain == second_chain);
  const auto& own = cfg.files[1].parsed[0].block;  // s.conf's own `root /srv;`
  CHECK(first.block.data() == own.data());
  CHECK(second.block.data() != own.data());
}

TEST_CASE("a file read at the top level and included as well gets chain 0 where not included") {
  // A folder of site files: b.conf is read on its own (chain 0) and included by a.conf;
  // whichever comes first, each place has its own chain.
  temp_dir tmp;
  const auto dir = tmp.path();
  std::ofstream(dir / "a.conf") << "server { include " << (dir / "b.conf").string() << "; }\n";
  std::ofstream(dir / "b.conf") << "location / { root /srv; }\n";
  auto disk = cfgns::make_disk_source();
  std::vector<cfgns::list<cfgns::directive>> roots;
  std::vector<std::uint32_t> indices;
  auto cfg = cfgns::load_each({(dir / "a.conf").string(), (dir / "b.conf").string()}, *disk, {},
                              roots, indices);
  REQUIRE(roots.size() == 2);
  const auto& included = roots[0][0].block[0];  // b.conf's location inside a.conf's server
  const auto& alone = roots[1][0];              // b.conf's location on its own
  CHECK(included.chain != 0);
  REQUIRE(included.block.size() == 1);
  CHECK(included.block[0].chain == included.chain);
  CHECK(alone.chain == 0);
  REQUIRE(alone.block.size() == 1);
  CHECK(alone.block[0].chain == 0);
}

TEST_CASE("read_ahead serves regular files in order, skips ahead, and serves nothing else") {
  temp_dir t;
  std::vector<std::string> paths;
  for (int i = 0; i < 12; ++i)
    paths.push_back(
        t.write("f" + std::to_string(i) + ".conf", "# file " + std::to_string(i)).string());
  const auto fifo = t.path() / "fifo.conf";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  paths.insert(paths.begin() + 3, fifo.string());                      // a FIFO: never served
  paths.insert(paths.begin() + 5, (t.path() / "gone.conf").string());  // missing
  const auto big = t.write("big.conf", std::string(100, 'x'));
  paths.insert(paths.begin() + 7, big.string());  // over max_bytes below
  // Two files held at most: the window moves as files are taken.
  cfgns::read_ahead ahead(paths, 64, 2, 1 << 20);
  auto content = [&](const std::string& p) {
    auto got = ahead.take(p);
    return got ? got->bytes : std::string("(not served)");
  };
  CHECK(content(paths[0]) == "# file 0");
  CHECK(content(paths[1]) == "# file 1");
  CHECK(content(paths[3]) == "(not served)");  // the FIFO (paths[2] skipped)
  CHECK(content(paths[2]) == "(not served)");  // before the last one taken
  CHECK(content(paths[5]) == "(not served)");  // missing
  CHECK(content(paths[7]) == "(not served)");  // too big
  CHECK(content(paths[8]) == "# file 5");
  CHECK(content((t.path() / "other.conf").string()) == "(not served)");  // never listed
  // A jump far ahead of what was read is served too.
  CHECK(content(paths.back()) == "# file 11");
  CHECK(content(paths[9]) == "(not served)");
  struct stat sb {};
  REQUIRE(::stat(paths[0].c_str(), &sb) == 0);
  cfgns::read_ahead again({paths[0]}, 64);
  const auto first = again.take(paths[0]);
  REQUIRE(first);
  CHECK(first->inode == static_cast<std::uint64_t>(sb.st_ino));
  CHECK(first->device == static_cast<std::uint64_t>(sb.st_dev));
  // Destroyed with files not taken: stops, does not hang.
  { cfgns::read_ahead unused(paths, 64, 1, 1); }
}

TEST_CASE("a glob of many files loads as it did one file at a time, errors included") {
  temp_dir t;
  std::string expect;
  for (int i = 0; i < 40; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "sites/%03d.conf", i);
    t.write(name, "server { server_name s" + std::to_string(i) + "; }\n");
  }
  const auto main = t.write("nginx.conf", "http { include sites/*.conf; }\n");
  auto cfg = cfgns::load_file(main.string());
  REQUIRE(cfg.root.size() == 1);
  const auto& http = cfg.root[0].block;
  REQUIRE(http.size() == 40);
  for (int i = 0; i < 40; ++i) {
    CAPTURE(i);
    const auto& server = http[static_cast<std::size_t>(i)];
    REQUIRE(server.block.size() == 1);
    CHECK(server.block[0].args[0].value() == "s" + std::to_string(i));
    char name[32];
    std::snprintf(name, sizeof name, "/sites/%03d.conf", i);
    CHECK(cfg.files[server.file].path == t.path().string() + name);
    struct stat sb {};
    REQUIRE(::stat(cfg.files[server.file].path.c_str(), &sb) == 0);
    CHECK(cfg.files[server.file].inode == static_cast<std::uint64_t>(sb.st_ino));
  }
  // A FIFO among them is refused, as without reading ahead; a syntax error in the 30th file
  // is reported there, with its include.
  const auto fifo = t.path() / "sites/015.conf";
  std::filesystem::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(error_of([&] {
          cfgns::load_file(main.string());
        }).find("015.conf\" is not a regular file") != std::string::npos);
  std::filesystem::remove(fifo);
  t.write("sites/015.conf", "server { }\n");
  t.write("sites/030.conf", "server { server_name s30 }\n");
  CHECK(error_of([&] { cfgns::load_file(main.string()); }) ==
        t.path().string() + "/sites/030.conf:1:26: unexpected \"}\"");
  // A symlink to a device among them reads as empty, as nginx reads it.
  t.write("sites/030.conf", "server { }\n");
  std::filesystem::create_symlink("/dev/null", t.path() / "sites/020.conf.dev");
  std::filesystem::rename(t.path() / "sites/020.conf.dev", t.path() / "sites/020.conf");
  auto with_device = cfgns::load_file(main.string());
  CHECK(with_device.root[0].block.size() == 39);
}
