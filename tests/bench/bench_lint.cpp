// Bench for lint's speed and memory (figures, not a timed test). For each config shape and
// size it times `ngxtls lint --format json -o /dev/null` as an operator runs it, on the three
// ways a config reaches lint:
//   file   `ngxtls lint FILE`
//   stdin  `ngxtls lint - < FILE`
//   dump   `cat DUMP | ngxtls lint -`, DUMP being what `nginx -T` prints for FILE
// and `ngxtls parse FILE` (`parse`: the syntax tree as JSON; `xplane`: --format crossplane; each
// should cost no more than lint, and prints its CPU time over lint's), the paths
// that compare configs (`fleet`: `lint --fleet FILE DUMP`, two instances serving every name;
// `basel`: `lint --baseline FILE FILE`; no time budget, but their growth is judged), and prints
// wall time (best of --runs after a warm-up), CPU time (user + sys) and the peak RSS of the command
// (wait4 rusage). Shapes: `tuned`, the generator the code was tuned on (tests/bench/gen_config.hpp:
// about 700 TLS servers per MB, a few percent with findings) and shapes it was not tuned on:
// `findings` (every server with findings), `certs` (1,000 distinct certificate files), `hostnames`
// (maps with `hostnames` and 200 host keys per 40 servers), `dump` (the config cut into thousands
// of included files: the file path follows the includes on disk and the dump holds thousands of
// files), `snippets` (every server takes its TLS options from one included file, as certbot writes
// them, and includes a proxy snippet: two small files included 15,000 times each), `ipsites` (every
// TLS server on an address of its own, as hosting panels set up IP-based sites: as many listen
// sockets as servers), `locations` (60 more `location` blocks per server, some nested) and `corpus`
// (the real configs of the corpus, $NGXTLS_CORPUS_DIR or ../shared/corpus, inside one http block,
// repeated to the size; skipped when the corpus is absent), and the held-out shapes written apart
// from the generator from the corpus's real configs (`held-sites`, `held-iphost`, `held-locations`,
// `held-names`, `held-h5bp` by tests/bench/held_out_shapes.py; `held-certbot`, `held-handbook` by
// held_out_shapes2.py; their dump is every file the config reads, as nginx -T prints it; skipped
// when the script fails, as without the corpus or python3). Then parse throughput of the tuned
// config and in-process phases (load, model, rules; BENCH_LINT_RULES=1 adds a line per rule);
// --nginx adds `nginx -t` on the largest tuned file for comparison.
// Budget (2 cores): a 20 MB config lints in under 0.5 s wall on every path and shape. Growth:
// from each size to the next, per shape and path, CPU time may grow at most 1.15 times as much
// as the input (2.3 from 20 to 40 MB); a larger step is a superlinear one and fails the bench
// (exit 1), as does a lint that exits with neither 0 nor 1. --report-only prints the same and
// fails only on such a lint (CI runs it at a small size: timings there say little).
//
// Usage: bench_lint [--sizes 20,40] [--shapes tuned,findings,...] [--paths file,parse,...]
//                   [--runs 3] [--nginx]
//                   [--keep DIR] [--report-only]
//        bench_lint --write FILE MB [CERT KEY]   (just write a generated config; without
//                                                 CERT/KEY a PKI is made next to FILE)
//        bench_lint --phases FILE                (in-process phases and memory of one config)
#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/gen_config.hpp"
#include "config/loader.hpp"
#include "engine/engine.hpp"
#include "model/model.hpp"
#include "report/lint_output.hpp"
#include "support/nginx_run.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

extern char** environ;

using namespace ngxtls;
using clock_type = std::chrono::steady_clock;

namespace {

double s_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// CPU seconds of this thread: the machine is shared, and wall time under load says more
// about the neighbours than about the parser.
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct child_result {
  int status = -1;
  double wall_s = 0;
  double cpu_s = 0;  ///< user + system CPU seconds of the child
  double max_rss_mb = 0;
};

// Runs argv with stdout/stderr to /dev/null (stderr kept when `show_err`); wall time and the
// child's own peak RSS from wait4().
child_result spawn_and_wait(const std::vector<std::string>& argv, bool show_err) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  if (!show_err) posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  child_result r;
  const auto t0 = clock_type::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    return r;  // status -1
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  r.wall_s = s_since(t0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.max_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
  r.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  return r;
}

// Measured runs are spawned by a process forked at start-up, while the bench is small: Linux
// charges a child with its parent's peak RSS at exec (exec_mmap keeps the old mm's hiwater in
// the child's maxrss, and a vfork child's old mm is the parent's), so a lint spawned from this
// process, which holds a 20 MB config and its tree by then, read 19 MB too high.
// Requests: show_err byte, then argv as NUL-terminated strings, then an empty string.
struct spawner {
  int to = -1, from = -1;
  pid_t pid = -1;
};
spawner the_spawner;

bool read_all(int fd, void* p, std::size_t n) {
  auto* b = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t got = ::read(fd, b, n);
    if (got <= 0) return false;
    b += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* p, std::size_t n) {
  const auto* b = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t put = ::write(fd, b, n);
    if (put <= 0) return false;
    b += put;
    n -= static_cast<std::size_t>(put);
  }
  return true;
}

void start_spawner() {
  int req[2], rep[2];
  if (::pipe(req) != 0 || ::pipe(rep) != 0) throw std::runtime_error("pipe failed");
  // The spawner and everything it runs (the measured `nginx -t` among them) live in a private
  // mount namespace over nginx's compiled-in state directories: as root, `nginx -t` on the
  // generated http{} would chown /var/lib/nginx/* (support/nginx_run.hpp).
  const ngxtls::test::nginx_isolation isolation({"/usr/sbin/nginx"});
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(req[1]);
    ::close(rep[0]);
    if (!isolation.apply()) ::_exit(0);  // run_measured then reports that the spawner died
    for (;;) {
      char show = 0;
      if (!read_all(req[0], &show, 1)) ::_exit(0);
      std::vector<std::string> argv;
      std::string cur;
      for (;;) {
        char c = 0;
        if (!read_all(req[0], &c, 1)) ::_exit(0);
        if (c != '\0') {
          cur += c;
          continue;
        }
        if (cur.empty()) break;
        argv.push_back(std::move(cur));
        cur.clear();
      }
      const child_result r = spawn_and_wait(argv, show != 0);
      if (!write_all(rep[1], &r, sizeof r)) ::_exit(0);
    }
  }
  ::close(req[0]);
  ::close(rep[1]);
  the_spawner = {req[1], rep[0], pid};
}

child_result run_measured(const std::vector<std::string>& argv, bool show_err = false) {
  if (the_spawner.pid < 0) return spawn_and_wait(argv, show_err);
  std::string msg(1, show_err ? '\1' : '\0');
  for (const auto& a : argv) msg.append(a).push_back('\0');
  msg.push_back('\0');
  child_result r;
  if (!write_all(the_spawner.to, msg.data(), msg.size()) ||
      !read_all(the_spawner.from, &r, sizeof r))
    throw std::runtime_error("the spawner process died");
  if (r.status == -1) throw std::runtime_error("cannot run " + argv[0]);
  return r;
}

std::vector<bench::cert_pair> make_certs(const std::filesystem::path& dir) {
  // A handful of real files, shared by thousands of servers (as fleets share wildcards).
  std::vector<bench::cert_pair> certs;
  const char* types[] = {"ec", "rsa", "ec", "rsa"};
  for (int i = 0; i < 4; ++i) {
    tls::pki_options po;
    po.key_type = types[i];
    const std::string domain = "example-" + std::to_string(i) + ".com";
    po.dns_names = {"*." + domain, domain};
    auto p = tls::make_pki((dir / ("pki" + std::to_string(i))).string(), po);
    certs.push_back({p.chain, p.leaf_key, domain});
  }
  return certs;
}

std::string write_config(const std::filesystem::path& file, double mb,
                         const std::vector<bench::cert_pair>& certs) {
  bench::gen_options o;
  o.target_bytes = static_cast<std::size_t>(mb * 1024 * 1024);
  o.certs = certs;
  o.work_dir = file.parent_path().string();
  std::string text = bench::generate_config(o);
  std::ofstream(file, std::ios::binary) << text;
  return text;
}

// Best-of-N parse of the bytes already in memory: the parser alone, no file I/O; CPU time.
double parse_mb_per_s(const std::string& text, std::size_t& directives) {
  double best = 1e9;
  const int runs = text.size() > (8u << 20) ? 3 : 5;
  for (int i = 0; i < runs; ++i) {
    const double t0 = thread_cpu_s();
    auto tree = config::parse_buffer(text, "bench.conf", 0);
    const double s = thread_cpu_s() - t0;
    best = std::min(best, s);
    directives = tree.size();
  }
  return static_cast<double>(text.size()) / (1024.0 * 1024.0) / best;
}

// In-process phases of one lint (as `ngxtls lint` runs them, before the report): load
// (read + parse + include expansion), model, rules. Seconds.
double heap_mb() {
  return static_cast<double>(mallinfo2().uordblks) / (1024.0 * 1024.0);
}

void print_phases(const std::filesystem::path& file) {
  const double heap0 = heap_mb();
  auto t0 = clock_type::now();
  auto cfg = config::load_file(file.string());
  const double load_s = s_since(t0);
  double file_mb = 0;
  for (const auto& f : cfg.files)
    file_mb += static_cast<double>(f.content.size()) / (1024.0 * 1024.0);
  const double heap_tree = heap_mb() - heap0;
  // The tree and the file's bytes live in the config's storage (not malloc).
  const double stored = static_cast<double>(cfg.store->bytes_used()) / (1024.0 * 1024.0);
  model::assumed_versions v;
  v.nginx = model::version{1, 22, 1};
  t0 = clock_type::now();
  auto m = model::build(cfg, v);
  const double model_s = s_since(t0);
  const double heap_model = heap_mb() - heap0 - heap_tree;
  t0 = clock_type::now();
  auto found = engine::run(m, {});
  const double rules_s = s_since(t0);
  std::printf("  phases %s: load %.3f s, model %.3f s, rules %.3f s, %zu servers, %zu findings\n",
              file.filename().c_str(), load_s, model_s, rules_s, m.servers.size(), found.size());
  const double heap_found = heap_mb() - heap0 - heap_tree - heap_model;
  report::lint_report rep;
  rep.assumed = v;
  rep.inputs.push_back(file.string());
  rep.findings = std::move(found);
  t0 = clock_type::now();
  const std::string json = report::render_json(rep);
  const double json_s = s_since(t0);
  std::printf(
      "  report: json %.3f s, %.1f MB; in use: config %.1f MB (storage %.1f MB: file "
      "%.1f MB; tree %.1f MB; heap %.1f "
      "MB), model %.1f MB, findings %.1f MB\n",
      json_s, static_cast<double>(json.size()) / (1024.0 * 1024.0), stored + heap_tree, stored,
      file_mb, stored - file_mb, heap_tree, heap_model, heap_found);
  if (std::getenv("BENCH_LINT_RULES")) {
    // Per rule, to find the slow ones.
    for (const auto& r : engine::all_rules()) {
      engine::lint_options o;
      o.select = std::set<std::string>{r.id};
      t0 = clock_type::now();
      auto f = engine::run(m, o);
      std::printf("    %-28s %.3f s %zu findings\n", r.id.c_str(), s_since(t0), f.size());
    }
  }
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

std::vector<double> parse_sizes(const std::string& s) {
  std::vector<double> out;
  for (const auto& item : split_list(s)) out.push_back(std::stod(item));
  return out;
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

/// The corpus's configs that nginx accepts in an http or server block and that include
/// nothing, inside one http block, repeated until `bytes`; empty when there is no corpus.
std::string corpus_config(std::size_t bytes) {
  const auto dir = test::corpus_dir();
  if (!dir) return {};
  std::ifstream manifest(*dir / "MANIFEST.tsv");
  std::string line;
  std::getline(manifest, line);  // header
  std::string body;
  while (std::getline(manifest, line)) {
    std::vector<std::string> col;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, '\t')) col.push_back(c);
    if (col.size() < 11 || col[8] != "ok" || (col[10] != "http" && col[10] != "server")) continue;
    std::ifstream in(*dir / col[0], std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.empty() || text.find("include") != std::string::npos) continue;
    body += "# corpus: " + col[0] + "\n";
    body += col[10] == "server" ? "server {\n" + text + "\n}\n" : text + "\n";
  }
  if (body.empty()) return {};
  std::string out = "events {}\nhttp {\n";
  while (out.size() < bytes) out += body;
  return out + "}\n";
}

/// One config shape at one size: the main file, and what `nginx -T` prints for it.
struct bench_input {
  std::filesystem::path file;
  std::filesystem::path dump;
  std::size_t bytes = 0;  ///< all files together
  std::size_t files = 1;
  /// For `lint -`: the conf prefix its relative includes resolve against ("" for the
  /// current directory, as for the generated shapes, whose paths are absolute).
  std::string stdin_conf_prefix;
};

/// The held-out shapes: written by scripts apart from the generator, from the corpus's real
/// configs (tests/bench/held_out_shapes.py, held_out_shapes2.py), each as `held-SHAPE`.
const std::map<std::string, std::string>& held_out_scripts() {
  static const std::map<std::string, std::string> scripts = {
      {"held-sites", "held_out_shapes.py"},     {"held-iphost", "held_out_shapes.py"},
      {"held-locations", "held_out_shapes.py"}, {"held-names", "held_out_shapes.py"},
      {"held-h5bp", "held_out_shapes.py"},      {"held-certbot", "held_out_shapes2.py"},
      {"held-handbook", "held_out_shapes2.py"},
  };
  return scripts;
}

/// A held-out shape written by its script under `base`, with the dump `nginx -T` prints for
/// it: every file the loader read, once, in the order first read (as nginx opens them).
/// Empty (bytes 0) when the script fails, as it does without the corpus.
bench_input held_out_input(const std::string& shape, double mb, const std::filesystem::path& base) {
  bench_input in;
  const std::string script =
      (test::source_dir() / "tests/bench" / held_out_scripts().at(shape)).string();
  const std::string size = std::to_string(static_cast<int>(mb));
  // held_out_shapes.py writes OUT_DIR/SHAPE_MBmb and makes its 40 certificates (half of them
  // RSA-2048, ~20 s on a busy machine) once per OUT_DIR: every shape and size shares one.
  const std::filesystem::path out_dir =
      held_out_scripts().at(shape) == "held_out_shapes.py" ? base.parent_path() / "held-out" : base;
  std::filesystem::create_directories(base);
  const test::command_result r =
      test::run({"python3", script, out_dir.string(), shape.substr(5), size}, "", 1800);
  if (r.exit_code != 0) {
    std::fprintf(stderr, "bench_lint: %s failed: %s\n", script.c_str(), r.err.c_str());
    return in;
  }
  std::string path = r.out;
  while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
  in.file = path;
  in.dump = base / "dump.txt";
  in.stdin_conf_prefix = in.file.parent_path().string();
  const config::config cfg = config::load_file(in.file.string());
  std::string dump;
  for (const auto& f : cfg.files) {
    dump += "# configuration file " + f.path + ":\n";
    dump += f.content;
    dump += "\n";
    in.bytes += f.content.size();
  }
  write_text(in.dump, dump);
  in.files = cfg.files.size();
  return in;
}

bench_input make_input(const std::string& shape, double mb, const std::filesystem::path& dir,
                       const std::vector<bench::cert_pair>& certs,
                       const std::vector<bench::cert_pair>& many_certs) {
  const std::string name = shape + "_" + std::to_string(static_cast<int>(mb)) + "mb";
  const std::filesystem::path base = dir / name;
  if (held_out_scripts().count(shape)) return held_out_input(shape, mb, base);
  bench_input in;
  in.file = base / "nginx.conf";
  in.dump = base / "dump.txt";
  bench::gen_options o;
  o.target_bytes = static_cast<std::size_t>(mb * 1024 * 1024);
  o.certs = certs;
  o.work_dir = dir.string();
  std::string text;
  if (shape == "corpus") {
    text = corpus_config(o.target_bytes);
    if (text.empty()) return {};
  } else {
    if (shape == "findings") o.findings_everywhere = true;
    if (shape == "certs") o.certs = many_certs;
    if (shape == "hostnames") o.hostname_keys = 200;
    if (shape == "snippets") o.snippet_dir = (base / "snippets").string();
    if (shape == "ipsites") o.own_address = true;
    if (shape == "locations") o.extra_locations = 60;
    text = bench::generate_config(o);
  }
  if (shape == "snippets") {
    // As nginx -T prints it: the main file, then each snippet once, when first included.
    std::string dump = "# configuration file " + in.file.string() + ":\n" + text + "\n";
    for (const auto& [path, snippet] : bench::snippet_files(o.snippet_dir)) {
      write_text(path, snippet);
      dump += "# configuration file " + path + ":\n" + snippet + "\n";
    }
    write_text(in.file, text);
    write_text(in.dump, dump);
    in.bytes = text.size();
    in.files = 3;
    return in;
  }
  if (shape == "dump") {
    const bench::split_config split = bench::split_into_sites(text, base.string(), 4);
    write_text(in.file, split.main);
    for (const auto& [path, site] : split.sites) write_text(path, site);
    const std::string dump = bench::dump_of(in.file.string(), split);
    write_text(in.dump, dump);
    in.bytes = dump.size();
    in.files = 1 + split.sites.size();
    return in;
  }
  write_text(in.file, text);
  write_text(in.dump, "# configuration file " + in.file.string() + ":\n" + text + "\n");
  in.bytes = text.size();
  return in;
}

/// Copies of the four PKIs' chain and key under `n` distinct names (each file is read and
/// parsed by lint on its own).
std::vector<bench::cert_pair> copy_certs(const std::vector<bench::cert_pair>& certs,
                                         const std::filesystem::path& dir, std::size_t n) {
  std::filesystem::create_directories(dir);
  std::vector<bench::cert_pair> out;
  for (std::size_t i = 0; i < n; ++i) {
    const bench::cert_pair& c = certs[i % certs.size()];
    const auto crt = dir / ("c" + std::to_string(i) + ".pem");
    const auto key = dir / ("c" + std::to_string(i) + ".key");
    std::filesystem::copy_file(c.cert, crt, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(c.key, key, std::filesystem::copy_options::overwrite_existing);
    out.push_back({crt.string(), key.string(), c.domain});
  }
  return out;
}

/// One measured size of one shape and path.
struct growth_point {
  double cpu_s = 0;
  double wall_s = 0;
  double real_mb = 0;  ///< the input's actual size
};

/// Prints, per shape and path, how CPU and wall time grow from each size to the next,
/// against how the input grew: time growing more than 1.15 times as fast as the input (2.3
/// when it doubles) is a superlinear step. Judged on CPU time (user + sys: what the machine's
/// other work changes least). Returns true when any step is superlinear.
bool print_growth(
    const std::map<std::string, std::map<std::string, std::map<double, growth_point>>>& growth) {
  constexpr double allowed = 1.15;  // times the input's growth: 2.3 for twice the input
  bool superlinear = false;
  bool header = false;
  for (const auto& [shape, paths] : growth) {
    for (const auto& [path, sizes] : paths) {
      const growth_point* prev = nullptr;
      for (const auto& [mb, pt] : sizes) {
        if (prev && prev->real_mb > 0 && prev->cpu_s > 0 && prev->wall_s > 0) {
          if (!header) {
            std::printf("%-10s %-6s %-13s %8s %8s %8s %s\n", "growth", "path", "MB", "input", "cpu",
                        "wall", "verdict (cpu ratio at most 1.15 x input's)");
            header = true;
          }
          const double input = pt.real_mb / prev->real_mb;
          const double cpu = pt.cpu_s / prev->cpu_s;
          const double wall = pt.wall_s / prev->wall_s;
          const bool bad = cpu > allowed * input;
          superlinear = superlinear || bad;
          char sizes_text[32];
          std::snprintf(sizes_text, sizeof sizes_text, "%.0f->%.0f", prev->real_mb, pt.real_mb);
          std::printf("%-10s %-6s %-13s %8.2f %8.2f %8.2f %s\n", shape.c_str(), path.c_str(),
                      sizes_text, input, cpu, wall, bad ? "SUPERLINEAR" : "ok");
        }
        prev = &pt;
      }
    }
  }
  if (header)
    std::printf("growth: %s\n", superlinear ? "SUPERLINEAR (a failure of the bench)" : "linear");
  return superlinear;
}

std::string shell_quote(const std::string& s) {
  return "'" + s + "'";
}

}  // namespace

int main(int argc, char** argv) try {
  start_spawner();
  std::vector<double> sizes = {20, 40};
  std::vector<std::string> shapes = {"tuned",      "findings",   "certs",        "hostnames",
                                     "dump",       "snippets",   "ipsites",      "locations",
                                     "corpus",     "held-sites", "held-iphost",  "held-locations",
                                     "held-names", "held-h5bp",  "held-certbot", "held-handbook"};
  bool run_nginx = false;
  bool report_only = false;
  std::vector<std::string> only_paths;  // empty: every path
  int runs = 3;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--write" && i + 2 < argc) {
      const std::filesystem::path file = std::filesystem::absolute(argv[i + 1]);
      const double mb = std::stod(argv[i + 2]);
      std::vector<bench::cert_pair> certs;
      if (i + 4 < argc)
        certs.push_back({argv[i + 3], argv[i + 4]});
      else
        certs = make_certs(file.parent_path());
      const auto text = write_config(file, mb, certs);
      std::cout << "wrote " << file.string() << " (" << text.size() << " bytes)\n";
      return 0;
    }
    if (a == "--phases" && i + 1 < argc) {
      print_phases(std::filesystem::absolute(argv[i + 1]));
      return 0;
    }
    if (a == "--sizes" && i + 1 < argc)
      sizes = parse_sizes(argv[++i]);
    else if (a == "--shapes" && i + 1 < argc)
      shapes = split_list(argv[++i]);
    else if (a == "--paths" && i + 1 < argc)
      only_paths = split_list(argv[++i]);
    else if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::stoi(argv[++i]));
    else if (a == "--nginx")
      run_nginx = true;
    else if (a == "--keep" && i + 1 < argc)
      keep = argv[++i];
    else if (a == "--report-only")
      report_only = true;
    else {
      std::cerr << "usage: bench_lint [--sizes 20,40] [--shapes "
                   "tuned,findings,certs,hostnames,dump,snippets,ipsites,locations,corpus,"
                   "held-sites,held-iphost,held-locations,held-names,held-h5bp,held-certbot,"
                   "held-handbook] [--paths file,stdin,dump,parse,xplane,fleet,basel] [--runs 3] "
                   "[--nginx] [--keep DIR] [--report-only] "
                   "| --write FILE MB [CERT KEY] | --phases FILE\n";
      return 2;
    }
  }

  test::temp_dir tmp;
  const std::filesystem::path dir = keep.empty() ? tmp.path() : std::filesystem::absolute(keep);
  std::filesystem::create_directories(dir);
  const auto certs = make_certs(dir);
  const auto many_certs = copy_certs(certs, dir / "many-certs", 1000);
  const std::string ngxtls_bin = test::ngxtls_binary();
  std::printf("ngxtls: %s; best of %d runs after a warm-up\n", ngxtls_bin.c_str(), runs);
  std::printf("%-10s %8s %6s %-6s %8s %8s %8s %5s %s\n", "shape", "size_MB", "files", "path",
              "wall_s", "cpu_s", "RSS_MB", "exit", "budget");
  bool over_budget = false;
  bool failed = false;  // a lint that did not finish with findings or none (exit 0 or 1)
  // shape -> path -> size -> (cpu_s, wall_s, MB): the growth between sizes, printed at the end.
  std::map<std::string, std::map<std::string, std::map<double, growth_point>>> growth;
  std::filesystem::path largest_tuned;
  double largest_tuned_wall = 0, largest_tuned_rss = 0;
  for (const std::string& shape : shapes) {
    for (double mb : sizes) {
      const bench_input in = make_input(shape, mb, dir, certs, many_certs);
      if (in.bytes == 0) {
        std::printf("%-10s %8.0f  skipped: %s\n", shape.c_str(), mb,
                    test::corpus_missing_reason().c_str());
        continue;
      }
      const std::string lint =
          shell_quote(ngxtls_bin) + " lint --format json -o /dev/null --nginx-version 1.22.1 ";
      const std::pair<const char*, std::string> paths[] = {
          {"file", "exec " + lint + shell_quote(in.file.string())},
          {"stdin", "exec " + lint +
                        (in.stdin_conf_prefix.empty()
                             ? std::string()
                             : "--conf-prefix " + shell_quote(in.stdin_conf_prefix) + " ") +
                        "- < " + shell_quote(in.file.string())},
          {"dump", "cat " + shell_quote(in.dump.string()) + " | " + lint + "-"},
          {"parse", "exec " + shell_quote(ngxtls_bin) + " parse " + shell_quote(in.file.string())},
          {"xplane", "exec " + shell_quote(ngxtls_bin) + " parse --format crossplane " +
                         shell_quote(in.file.string())},
          // The config and its dump as a fleet of two (every name served twice, two key
          // domains), and the config against itself as the baseline: the ticket key rules'
          // paths that compare configs.
          {"fleet", "exec " + lint + "--fleet " + shell_quote(in.file.string()) + " " +
                        shell_quote(in.dump.string())},
          {"basel", "exec " + lint + "--baseline " + shell_quote(in.file.string()) + " " +
                        shell_quote(in.file.string())},
      };
      double file_cpu_s = 0;
      for (const auto& [path, command] : paths) {
        if (!only_paths.empty() &&
            std::find(only_paths.begin(), only_paths.end(), path) == only_paths.end())
          continue;
        const std::vector<std::string> cmd = {"/bin/sh", "-c", command};
        run_measured(cmd);  // warm the page cache and the binary
        child_result best{};
        best.wall_s = 1e9;
        for (int i = 0; i < runs; ++i) {
          const child_result r = run_measured(cmd);
          if (r.wall_s < best.wall_s) best.wall_s = r.wall_s, best.status = r.status;
          if (i == 0 || r.cpu_s < best.cpu_s) best.cpu_s = r.cpu_s;
          best.max_rss_mb = std::max(best.max_rss_mb, r.max_rss_mb);
        }
        const double real_mb = static_cast<double>(in.bytes) / (1024.0 * 1024.0);
        const char* budget = "";
        char parse_note[48] = "";
        if (std::string(path) == "parse" || std::string(path) == "xplane") {
          // Judged against lint of the same file, on CPU time.
          std::snprintf(parse_note, sizeof parse_note, "parse/lint cpu %.2f",
                        file_cpu_s > 0 ? best.cpu_s / file_cpu_s : 0.0);
          budget = parse_note;
        } else if (real_mb < 21 && std::string(path) != "fleet" && std::string(path) != "basel") {
          // A fleet lints two configs and a baseline reads two: the budget is for one.
          budget = best.wall_s < 0.5 ? "ok (< 0.5 s)" : "OVER (0.5 s)";
          over_budget = over_budget || best.wall_s >= 0.5;
        }
        if (std::string(path) == "file") file_cpu_s = best.cpu_s;
        std::printf("%-10s %8.1f %6zu %-6s %8.3f %8.3f %8.1f %5d %s\n", shape.c_str(), real_mb,
                    in.files, path, best.wall_s, best.cpu_s, best.max_rss_mb, best.status, budget);
        failed = failed || (best.status != 0 && best.status != 1);
        growth[shape][path][mb] = {best.cpu_s, best.wall_s, real_mb};
        std::fflush(stdout);
        if (shape == "tuned" && std::string(path) == "file") {
          largest_tuned = in.file;
          largest_tuned_wall = best.wall_s;
          largest_tuned_rss = best.max_rss_mb;
        }
      }
    }
  }
  if (!largest_tuned.empty()) {
    const std::string text = test::read_file(largest_tuned);
    std::size_t top = 0;
    std::printf("parse %s: %.1f MB/s (thread CPU time, best of several)\n",
                largest_tuned.parent_path().filename().c_str(), parse_mb_per_s(text, top));
    print_phases(largest_tuned);
  }
  if (run_nginx && !largest_tuned.empty()) {
    const std::vector<std::string> cmd = {"/usr/sbin/nginx",
                                          "-t",
                                          "-q",
                                          "-p",
                                          dir.string() + "/",
                                          "-c",
                                          largest_tuned.string(),
                                          "-e",
                                          (dir / "nginx-t.log").string()};
    auto r = run_measured(cmd, true);
    std::printf("nginx -t on %s: exit %d, wall %.2f s, cpu %.2f s, peak RSS %.1f MB\n",
                largest_tuned.string().c_str(), r.status, r.wall_s, r.cpu_s, r.max_rss_mb);
    std::printf("ratio nginx -t / ngxtls lint: wall %.0fx, peak RSS %.1fx\n",
                r.wall_s / largest_tuned_wall, r.max_rss_mb / largest_tuned_rss);
  }
  std::printf("budget: 20 MB lints in < 0.5 s wall on 2 cores on every path and shape: %s\n",
              over_budget ? "OVER" : "met");
  const bool superlinear = print_growth(growth);
  if (failed) std::printf("FAILED: a lint exited with neither 0 nor 1 (see the exit column)\n");
  if (report_only) return failed ? 1 : 0;
  return failed || superlinear ? 1 : 0;
} catch (const std::exception& e) {
  std::cerr << "bench_lint: " << e.what() << "\n";
  return 2;
}
