// Bench for `probe --load` (not a timed test): against one local nginx serving an ECDSA P-256
// and an RSA-2048 certificate, side by side in one run:
//  - `ab -n N -c C` without keep-alive, per key type (-Z cipher), full handshakes + GET /;
//  - `openssl s_time -new` per key type and `-reuse` (one connection at a time, no request);
//  - `ngxtls probe --load --tls1.2 -c C` (handshakes only) and with `--request`;
//  - `ngxtls probe --load --tls1.2 -c 1`, as s_time works (one connection at a time).
// Like with like: every client speaks TLS 1.2 and gets the same cipher per key type
// (ECDHE-{ECDSA,RSA}-AES128-GCM-SHA256: the server's list, its order preferred) and the same
// group (X25519: the server's only one); s_time -reuse resumes by session ticket, as ngxtls's
// ticket_tls12 phase (the server has no session cache: a resumption is a ticket); s_time looks
// up no CA store (-no-CA*: ngxtls verifies no chain either); s_time's rate is its connections
// over the wall time measured here, not over its "real seconds", which is always -time + 1
// (it stops at the first whole second past the end). Both s_time and ngxtls end a connection
// with a reset, no close_notify; ab sends close_notify and closes.
// Besides each rate, the CPU time per connection of the client (the tool's process) and of
// the server (the nginx workers, from /proc, over the tool's run or the ngxtls phase): where a
// connection's time goes, and what to make of a rate that the machine's load, not the server,
// decided.
// Goals: ngxtls's full rate >= 1.0x the better of ab and s_time -new; its resumed rate >= 1.0x
// s_time -reuse; its RSA/ECDSA and resumed/full ratios within 15% of the tools' doing the same
// work: RSA/ECDSA with --request against ab's (a request on every connection, concurrency C),
// and at -c 1 against s_time's; resumed/full at -c 1 against s_time's. An unmet goal is printed
// with what was measured about it.
// Each figure is the fastest of R rounds (other work on the machine only slows a run down).
// Usage: bench_load [seconds per phase, default 3] [concurrency, default 4] [ab -n, default 3000]
//                   [rounds R, default 2]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "support/nginx_instance.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

constexpr const char* ecdsa_cipher = "ECDHE-ECDSA-AES128-GCM-SHA256";
constexpr const char* rsa_cipher = "ECDHE-RSA-AES128-GCM-SHA256";

std::vector<pid_t> workers;  // the bench nginx's workers

// CPU seconds (user + system) the nginx workers used so far.
double server_cpu_s() {
  static const long hz = ::sysconf(_SC_CLK_TCK);
  double total = 0;
  for (pid_t w : workers) {
    std::ifstream f("/proc/" + std::to_string(w) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string v;
    // Fields 3.. of proc(5): utime is field 14, stime 15.
    for (int i = 3; i <= 15 && fields >> v; ++i)
      if (i == 14 || i == 15) total += std::stod(v) / hz;
  }
  return total;
}

// CPU seconds the bench's finished children used.
double children_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_CHILDREN, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// One measured figure: a rate and where a connection's time went.
struct figure {
  double per_s = 0;      // connections per second
  int connections = 0;   // counted
  double client_us = 0;  // client CPU per connection, us
  double server_us = 0;  // nginx workers' CPU per connection, us
};

// A tool run with the CPU it and the server used.
struct tool_run {
  command_result r;
  double wall_s = 0, client_cpu_s = 0, server_cpu_s = 0;
};

tool_run timed_run(const std::vector<std::string>& argv, int timeout_s) {
  tool_run t;
  double c0 = children_cpu_s(), s0 = server_cpu_s();
  auto t0 = std::chrono::steady_clock::now();
  t.r = run(argv, "", timeout_s);
  t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t.client_cpu_s = children_cpu_s() - c0;
  t.server_cpu_s = server_cpu_s() - s0;
  return t;
}

figure per_connection(const tool_run& t, int n, double per_s) {
  figure f;
  f.connections = n;
  f.per_s = per_s;
  if (n > 0) {
    f.client_us = t.client_cpu_s / n * 1e6;
    f.server_us = t.server_cpu_s / n * 1e6;
  }
  return f;
}

figure s_time(const std::string& target, bool reuse, const char* cipher, int seconds) {
  auto t = timed_run(
      {"openssl", "s_time", "-connect", target, reuse ? "-reuse" : "-new", "-tls1_2", "-cipher",
       cipher, "-no-CApath", "-no-CAfile", "-no-CAstore", "-time", std::to_string(seconds)},
      seconds + 30);
  static const std::regex re(R"((\d+) connections in \d+ real seconds)");
  std::smatch m;
  if (!std::regex_search(t.r.out, m, re)) {
    std::cerr << "s_time failed: " << t.r.err << "\n";
    return {};
  }
  int n = std::stoi(m[1]);
  // The process's wall time: the timed loop plus start-up and, with -reuse, one untimed
  // handshake (a few ms of `seconds`).
  return per_connection(t, n, n / t.wall_s);
}

// "Requests per second:    1234.56 [#/sec] (mean)" from ab's output.
figure ab(const std::string& url, const char* cipher, int n, int c) {
  auto t = timed_run({"ab", "-q", "-n", std::to_string(n), "-c", std::to_string(c), "-f", "TLS1.2",
                      "-Z", cipher, url},
                     300);
  static const std::regex re(R"(Requests per second:\s+([0-9.]+))");
  static const std::regex failed(R"(Failed requests:\s+(\d+))");
  std::smatch m;
  if (std::regex_search(t.r.out, m, failed) && m[1] != "0")
    std::cerr << "warning: ab: " << m[1] << " failed requests\n";
  if (!std::regex_search(t.r.out, m, re)) {
    std::cerr << "ab failed: " << t.r.err << "\n";
    return {};
  }
  return per_connection(t, n, std::stod(m[1]));
}

// ngxtls probe --load, its stdout (JSON) in a file and its stderr read line by line: each
// "ngxtls: load: PHASE" line starts a phase, so the server's CPU is sampled there.
struct ngxtls_run {
  nlohmann::json load;
  std::vector<double> server_marks;  // server CPU at each phase's start, and at the end
};

ngxtls_run ngxtls_load(const std::string& target, int seconds, int c, bool request,
                       const temp_dir& dir) {
  std::vector<std::string> argv{ngxtls_binary(),
                                "probe",
                                target,
                                "--sni",
                                "localhost",
                                "--tls1.2",
                                "--no-ocsp",
                                "-n",
                                "5",
                                "--load",
                                "--duration",
                                std::to_string(seconds),
                                "-c",
                                std::to_string(c),
                                "--format",
                                "json"};
  if (request) argv.push_back("--request");
  std::string out_path = (dir.path() / "ngxtls.json").string();
  int err_pipe[2];
  if (::pipe(err_pipe) != 0) throw std::runtime_error("pipe");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(err_pipe[1], 2);
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    if (!std::freopen(out_path.c_str(), "w", stdout)) _exit(127);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::close(err_pipe[1]);
  ngxtls_run out;
  FILE* err = ::fdopen(err_pipe[0], "r");
  char line[4096];
  while (std::fgets(line, sizeof line, err) != nullptr)
    if (std::string(line).rfind("ngxtls: load: ", 0) == 0)
      out.server_marks.push_back(server_cpu_s());
  std::fclose(err);
  int status = 0;
  ::waitpid(pid, &status, 0);
  out.server_marks.push_back(server_cpu_s());
  out.load = nlohmann::json::parse(read_file(out_path)).at("targets").at(0).at("load");
  return out;
}

figure phase(const ngxtls_run& run, const std::string& name, const std::string& key) {
  std::size_t ran = 0;  // phases that started, in order: one server mark each
  for (const auto& p : run.load.at("phases")) {
    std::string state = p.at("state");
    if (state == "not_run_interrupted" || state == "not_run_unanswered" ||
        state == "not_run_no_session")
      continue;
    if (p.at("phase") == name && p.at("certificate_key") == key) {
      figure f;
      f.per_s = p.at("connections_per_s").get<double>();
      f.connections = p.at("connections").get<int>();
      if (f.connections > 0) {
        double client_s = p.at("client_cpu_share").get<double>() * p.at("elapsed_s").get<double>() *
                          run.load.at("client_threads").get<double>();
        f.client_us = client_s / f.connections * 1e6;
        if (ran + 1 < run.server_marks.size())
          f.server_us = (run.server_marks[ran + 1] - run.server_marks[ran]) / f.connections * 1e6;
      }
      return f;
    }
    ++ran;
  }
  return {};
}

double client_cpu(const nlohmann::json& load) {
  double most = 0;
  for (const auto& p : load.at("phases"))
    most = std::max(most, p.at("client_cpu_share").get<double>());
  return most;
}

bool within(double ours, double theirs, double tolerance) {
  return theirs > 0 && std::abs(ours / theirs - 1) <= tolerance;
}

const char* verdict(bool ok) {
  return ok ? "met" : "NOT met";
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}

std::string load_average() {
  try {
    std::istringstream f(read_file("/proc/loadavg"));
    std::string one, five, fifteen;
    f >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
  } catch (const std::exception&) {
    return "?";
  }
}

void row(const char* what, const figure& ec, const figure& rsa, const figure* resumed) {
  auto cell = [](const figure& f) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%7.0f (%4.0f/%4.0f)", f.per_s, f.client_us, f.server_us);
    return std::string(buf);
  };
  std::printf("  %-32s %20s %20s %20s\n", what, cell(ec).c_str(), cell(rsa).c_str(),
              resumed ? cell(*resumed).c_str() : "-");
}

// At -c 1 a connection waits for the client and the server in turn: with no other load its
// wall time is about their CPU time plus the loopback's latency. Far more means the rate
// measured how fast a busy machine's scheduler ran the two, not the server.
void explain_c1(const char* who, const figure& f) {
  if (f.per_s <= 0) return;
  double wall_us = 1e6 / f.per_s;
  std::printf("    %s: %.0f us a connection against %.0f us of client and server CPU (%.1fx)\n",
              who, wall_us, f.client_us + f.server_us, wall_us / (f.client_us + f.server_us));
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = argc > 1 ? std::atoi(argv[1]) : 3;
  int c = argc > 2 ? std::atoi(argv[2]) : 4;
  int n = argc > 3 ? std::atoi(argv[3]) : 3000;
  int rounds = std::max(1, argc > 4 ? std::atoi(argv[4]) : 2);
  temp_dir dir;
  tls::pki_options ro;
  ro.key_type = "rsa";
  auto rsa = tls::make_pki((dir.path() / "rsa").string(), ro);
  auto ec = tls::make_pki((dir.path() / "ec").string(), {});
  int port = free_port();
  // No session cache: a resumption is a ticket, for ngxtls and s_time -reuse alike.
  std::string conf = "server { listen 127.0.0.1:" + std::to_string(port) +
                     " ssl; server_name localhost; ssl_protocols TLSv1.2 TLSv1.3; "
                     "ssl_certificate " +
                     ec.chain + "; ssl_certificate_key " + ec.leaf_key + "; ssl_certificate " +
                     rsa.chain + "; ssl_certificate_key " + rsa.leaf_key + "; ssl_ciphers " +
                     ecdsa_cipher + ":" + rsa_cipher +
                     "; ssl_prefer_server_ciphers on; ssl_ecdh_curve X25519; "
                     "ssl_session_cache off; access_log off; location / { return 200 "
                     "\"ok\\n\"; } }\n";
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(2, conf), no);
  workers = ngx.worker_pids();
  std::string target = "127.0.0.1:" + std::to_string(port);
  std::string url = "https://" + target + "/";
  std::string load_before = load_average();

  // Other work on the machine can only slow a measurement down: each figure is the fastest of
  // `rounds`, every round running every tool and ngxtls once, one after another.
  figure ab_ec, ab_rsa, st_ec, st_rsa, st_reuse, full_ec, full_rsa, resumed, full_any, req_ec,
      req_rsa, one_ec, one_rsa, one_resumed;
  auto best = [](figure& kept, const figure& f) {
    if (f.per_s > kept.per_s) kept = f;
  };
  double cpu_handshakes = 0, cpu_request = 0, cpu_one = 0;
  for (int round = 0; round < rounds; ++round) {
    best(ab_ec, ab(url, ecdsa_cipher, n, c));
    best(ab_rsa, ab(url, rsa_cipher, n, c));
    best(st_ec, s_time(target, false, ecdsa_cipher, seconds));
    best(st_rsa, s_time(target, false, rsa_cipher, seconds));
    best(st_reuse, s_time(target, true, ecdsa_cipher, seconds));
    auto ours = ngxtls_load(target, seconds, c, false, dir);
    auto ours_req = ngxtls_load(target, seconds, c, true, dir);
    auto ours_one = ngxtls_load(target, seconds, 1, false, dir);
    best(full_ec, phase(ours, "full_tls12", "ecdsa"));
    best(full_rsa, phase(ours, "full_tls12", "rsa"));
    best(resumed, phase(ours, "ticket_tls12", "any"));
    best(full_any, phase(ours, "full_tls12", "any"));
    best(req_ec, phase(ours_req, "full_tls12", "ecdsa"));
    best(req_rsa, phase(ours_req, "full_tls12", "rsa"));
    best(one_ec, phase(ours_one, "full_tls12", "ecdsa"));
    best(one_rsa, phase(ours_one, "full_tls12", "rsa"));
    best(one_resumed, phase(ours_one, "ticket_tls12", "any"));
    cpu_handshakes = std::max(cpu_handshakes, client_cpu(ours.load));
    cpu_request = std::max(cpu_request, client_cpu(ours_req.load));
    cpu_one = std::max(cpu_one, client_cpu(ours_one.load));
  }

  std::printf(
      "probe --load bench: TLS 1.2, ECDHE X25519, AES128-GCM-SHA256, tickets (no session cache), "
      "%d s per phase, concurrency %d (s_time: 1), ab -n %d, the fastest of %d rounds; load "
      "average %s before, %s after\n",
      seconds, c, n, rounds, load_before.c_str(), load_average().c_str());
  std::printf(
      "  each cell: connections/s (client CPU / server CPU per connection, us); the server is "
      "nginx, 2 workers\n");
  std::printf("  %-32s %20s %20s %20s\n", "", "full, ECDSA", "full, RSA", "resumed (ticket)");
  row("ab -c C, GET / each", ab_ec, ab_rsa, nullptr);
  row("openssl s_time -new / -reuse", st_ec, st_rsa, &st_reuse);
  row("ngxtls probe --load -c C", full_ec, full_rsa, &resumed);
  row("ngxtls probe --load -c C --request", req_ec, req_rsa, nullptr);
  row("ngxtls probe --load -c 1", one_ec, one_rsa, &one_resumed);
  std::printf(
      "  ab: C connections in flight, each a full handshake, GET / and its response, close_notify "
      "and FIN (rate: ab's requests/s)\n"
      "  s_time: one connection at a time, a handshake only, then a reset (rate: connections "
      "over the process's wall time)\n"
      "  ngxtls: C (or 1) in flight, a handshake only (--request: HEAD / and its response), then "
      "a reset (rate: the phase's connections_per_s); the key type by signature algorithms\n");
  std::printf("  ngxtls full with the default signature algorithms (RSA or ECDSA): %.0f/s\n",
              full_any.per_s);
  std::printf(
      "  ngxtls client CPU at most: %.0f%% (handshakes), %.0f%% (--request), %.0f%% (-c 1)\n",
      cpu_handshakes * 100, cpu_request * 100, cpu_one * 100);

  double best_full_tools = std::max(ab_ec.per_s, st_ec.per_s);
  bool g1 = full_ec.per_s >= best_full_tools;
  bool g2 = resumed.per_s >= st_reuse.per_s;
  double st_rsa_ratio = ratio(st_rsa.per_s, st_ec.per_s);
  double ab_rsa_ratio = ratio(ab_rsa.per_s, ab_ec.per_s);
  double req_rsa_ratio = ratio(req_rsa.per_s, req_ec.per_s);
  double one_rsa_ratio = ratio(one_rsa.per_s, one_ec.per_s);
  double st_resumed_ratio = ratio(st_reuse.per_s, st_ec.per_s);
  double one_resumed_ratio = ratio(one_resumed.per_s, one_ec.per_s);
  bool g3a = within(req_rsa_ratio, ab_rsa_ratio, 0.15);
  bool g3b = within(one_rsa_ratio, st_rsa_ratio, 0.15);
  bool g4 = within(one_resumed_ratio, st_resumed_ratio, 0.15);
  std::printf("goal: full (ECDSA) %.0f/s >= better of ab and s_time -new %.0f/s (%.2fx): %s\n",
              full_ec.per_s, best_full_tools, ratio(full_ec.per_s, best_full_tools), verdict(g1));
  std::printf("goal: resumed %.0f/s >= s_time -reuse %.0f/s (%.2fx): %s\n", resumed.per_s,
              st_reuse.per_s, ratio(resumed.per_s, st_reuse.per_s), verdict(g2));
  std::printf("goal: RSA/ECDSA with --request %.2f within 15%% of ab's %.2f: %s\n", req_rsa_ratio,
              ab_rsa_ratio, verdict(g3a));
  if (!g3a) {
    std::printf(
        "  measured: server CPU per connection RSA/ECDSA: ngxtls %.2f, ab %.2f; client CPU per "
        "connection, ECDSA: ngxtls %.0f us, ab %.0f us\n",
        ratio(req_rsa.server_us, req_ec.server_us), ratio(ab_rsa.server_us, ab_ec.server_us),
        req_ec.client_us, ab_ec.client_us);
    // A client-bound rate follows the client's CPU per connection, a server-bound one the
    // server's: the RSA/ECDSA rate ratio each would give, against the one measured.
    auto bound = [](const char* who, const figure& ec, const figure& rsa) {
      std::printf(
          "    %s: RSA/ECDSA %.2f measured; %.2f if the client limited it, %.2f if the server "
          "did; client CPU in use %.2f cores (ECDSA), %.2f (RSA)\n",
          who, ratio(rsa.per_s, ec.per_s), ratio(ec.client_us, rsa.client_us),
          ratio(ec.server_us, rsa.server_us), ec.per_s * ec.client_us / 1e6,
          rsa.per_s * rsa.client_us / 1e6);
    };
    bound("ab (one thread)", ab_ec, ab_rsa);
    bound("ngxtls --request", req_ec, req_rsa);
  }
  std::printf("goal: RSA/ECDSA at -c 1 %.2f within 15%% of s_time's %.2f: %s\n", one_rsa_ratio,
              st_rsa_ratio, verdict(g3b));
  if (!g3b) {
    std::printf(
        "  measured: server CPU per connection RSA/ECDSA: ngxtls %.2f, s_time %.2f (the "
        "server's own cost; %s within 15%%)\n",
        ratio(one_rsa.server_us, one_ec.server_us), ratio(st_rsa.server_us, st_ec.server_us),
        within(ratio(one_rsa.server_us, one_ec.server_us), ratio(st_rsa.server_us, st_ec.server_us),
               0.15)
            ? ""
            : "not");
    explain_c1("ngxtls, ECDSA", one_ec);
    explain_c1("ngxtls, RSA", one_rsa);
    explain_c1("s_time, ECDSA", st_ec);
    explain_c1("s_time, RSA", st_rsa);
  }
  std::printf("goal: resumed/full at -c 1 %.2f within 15%% of s_time's %.2f: %s\n",
              one_resumed_ratio, st_resumed_ratio, verdict(g4));
  if (!g4) {
    std::printf(
        "  measured: server CPU per connection full/resumed: ngxtls %.2f, s_time %.2f; client "
        "CPU per connection full/resumed: ngxtls %.0f/%.0f us, s_time %.0f/%.0f us\n",
        ratio(one_ec.server_us, one_resumed.server_us), ratio(st_ec.server_us, st_reuse.server_us),
        one_ec.client_us, one_resumed.client_us, st_ec.client_us, st_reuse.client_us);
    explain_c1("ngxtls, full", one_ec);
    explain_c1("ngxtls, resumed", one_resumed);
    explain_c1("s_time -new", st_ec);
    explain_c1("s_time -reuse", st_reuse);
  }
  return g1 && g2 && g3a && g3b && g4 ? 0 : 1;
}
