// Prober speed (figures, not a timed test): against one local nginx,
//  1. 40 TLS 1.3 resumption attempts: `ngxtls probe --tls1.3 --no-ocsp -n 40` vs the
//     40x `openssl s_client -sess_in` shell-style loop (goal: >= 20x faster);
//  2. full-handshake rate: the prober's vs `openssl s_time -new` on the same endpoint
//     (goal: >= 0.8x, i.e. the prober is not the bottleneck).
// Usage: bench_probe [seconds for s_time, default 3]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "probe/prober.hpp"
#include "support/nginx_instance.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using namespace ngxtls::test;
using clock_type = std::chrono::steady_clock;

namespace {

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

std::string server(int port, const tls::pki_paths& pki, const std::string& extra) {
  return "server { listen 127.0.0.1:" + std::to_string(port) +
         " ssl; server_name localhost; ssl_protocols TLSv1.2 TLSv1.3; ssl_certificate " +
         pki.chain + "; ssl_certificate_key " + pki.leaf_key + "; " + extra +
         " location / { return 200 \"ok\\n\"; } }\n";
}

// "N connections in T real seconds" from s_time's output, as connections per second.
double s_time_rate(const std::string& out) {
  static const std::regex re(R"((\d+) connections in (\d+) real seconds)");
  std::smatch m;
  if (!std::regex_search(out, m, re)) return 0;
  return std::stod(m[1]) / std::stod(m[2]);
}

double prober_full_rate(int port, bool tls13, int n) {
  auto t = probe::parse_target("127.0.0.1:" + std::to_string(port), std::string("localhost"));
  probe::probe_options o;
  o.attempts = n;
  o.ocsp = false;
  o.tls13 = tls13;
  o.tls12 = !tls13;
  auto r = probe::run_probe({t}, o).at(0);
  // TLS 1.3: the run on the no-resumption endpoint; TLS 1.2: the session-ID run (no cache).
  const auto& run = tls13 ? r.protocols.at(0) : r.protocols.at(1);
  if (run.resumed != 0)
    std::cerr << "warning: " << run.resumed << " resumed in the full-handshake run\n";
  return run.connections / (run.elapsed_ms / 1000.0);
}

}  // namespace

int main(int argc, char** argv) {
  int s_time_s = argc > 1 ? std::atoi(argv[1]) : 3;
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  int port = free_port(), port_full = free_port();
  nginx_options no;
  no.wait_ports = {port, port_full};
  // port: nginx defaults (tickets on); port_full: TLS 1.3 never resumes there (tickets off,
  // no cache: docs/nginx-facts.md#tickets-off-tls13), so every handshake is a full one.
  nginx_instance ngx(
      nginx_conf(2, server(port, pki, "") + server(port_full, pki, "ssl_session_tickets off;")),
      no);
  std::string target = "127.0.0.1:" + std::to_string(port);

  // 1. 40 resumption attempts.
  auto t0 = clock_type::now();
  auto pr = run({ngxtls_binary(), "probe", target, "--sni", "localhost", "--tls1.3", "--no-ocsp",
                 "-n", "40", "--format", "json"});
  double probe_ms = ms_since(t0);
  auto j = nlohmann::json::parse(pr.out);
  int probe_resumed = j["targets"][0]["protocols"][0]["resumed"];

  std::string sess = (dir.path() / "sess.pem").string();
  t0 = clock_type::now();
  run({"openssl", "s_client", "-connect", target, "-servername", "localhost", "-tls1_3",
       "-sess_out", sess, "-ign_eof"},
      "HEAD / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  int loop_resumed = 0;
  for (int i = 0; i < 40; ++i) {
    auto r = run({"openssl", "s_client", "-connect", target, "-servername", "localhost", "-tls1_3",
                  "-sess_in", sess});
    if (r.out.find("\nReused, ") != std::string::npos) ++loop_resumed;
  }
  double loop_ms = ms_since(t0);

  // 2. Full-handshake rates.
  std::printf("ngxtls probe bench (nginx 1.22, 2 workers, loopback, %ld cores)\n",
              sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("40 TLS 1.3 resumption attempts:\n");
  std::printf("  ngxtls probe --tls1.3 --no-ocsp -n 40 : %8.1f ms, %d/40 resumed\n", probe_ms,
              probe_resumed);
  std::printf(
      "  40x openssl s_client -sess_in loop    : %8.1f ms, %d/40 resumed (%.1f ms per attempt)\n",
      loop_ms, loop_resumed, loop_ms / 41);
  std::printf("  speedup                               : %8.1fx (goal >= 20x)\n",
              loop_ms / probe_ms);

  for (bool tls13 : {true, false}) {
    int p = tls13 ? port_full : port;
    double ours = prober_full_rate(p, tls13, 400);
    auto st = run({"openssl", "s_time", "-connect", "127.0.0.1:" + std::to_string(p), "-new",
                   "-time", std::to_string(s_time_s), tls13 ? "-tls1_3" : "-tls1_2"},
                  "", s_time_s + 30);
    double theirs = s_time_rate(st.out);
    std::printf("full handshakes per second, %s:\n", tls13 ? "TLS 1.3" : "TLS 1.2");
    std::printf("  ngxtls prober (-c 4, HEAD / each)     : %8.0f /s\n", ours);
    std::printf("  openssl s_time -new                   : %8.0f /s\n", theirs);
    std::printf("  ratio                                 : %8.2fx (goal >= 0.8x)\n",
                theirs > 0 ? ours / theirs : 0.0);
  }
  return 0;
}
