// Bench for `probe --load` (not a timed test): against one local nginx serving an ECDSA P-256
// and an RSA-2048 certificate (TLS 1.2, so the tools can pick the key type by cipher), side by
// side in one run:
//  - `ab -n N -c C` without keep-alive, per key type (-Z cipher), full handshakes + one request;
//  - `openssl s_time -new` per key type and `-reuse` (one connection at a time);
//  - `ngxtls probe --load --tls1.2 -c C` (handshakes only) and with `--request`.
//  - `ngxtls probe --load --tls1.2 -c 1`, as s_time works (one connection at a time).
// Goals: ngxtls's full rate >= 1.0x the better of ab and s_time -new; its resumed rate >= 1.0x
// s_time -reuse; its RSA/ECDSA and resumed/full ratios within 15% of the tools' doing the same
// work: RSA/ECDSA with --request against ab's (a request on every connection, concurrency C),
// and at -c 1 against s_time's; resumed/full at -c 1 against s_time's.
// Usage: bench_load [seconds per phase, default 3] [concurrency, default 4] [ab -n, default 3000]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "support/nginx_instance.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

constexpr const char* ecdsa_cipher = "ECDHE-ECDSA-AES128-GCM-SHA256";
constexpr const char* rsa_cipher = "ECDHE-RSA-AES128-GCM-SHA256";

// "N connections in T real seconds" from s_time's output, as connections per second.
double s_time_rate(const std::string& out) {
  static const std::regex re(R"((\d+) connections in (\d+) real seconds)");
  std::smatch m;
  if (!std::regex_search(out, m, re)) return 0;
  return std::stod(m[1]) / std::stod(m[2]);
}

double s_time(const std::string& target, bool reuse, const char* cipher, int seconds) {
  auto r = run({"openssl", "s_time", "-connect", target, reuse ? "-reuse" : "-new", "-tls1_2",
                "-cipher", cipher, "-time", std::to_string(seconds)},
               "", seconds + 30);
  return s_time_rate(r.out);
}

// "Requests per second:    1234.56 [#/sec] (mean)" from ab's output.
double ab(const std::string& url, const char* cipher, int n, int c) {
  auto r = run({"ab", "-q", "-n", std::to_string(n), "-c", std::to_string(c), "-f", "TLS1.2", "-Z",
                cipher, url},
               "", 300);
  static const std::regex re(R"(Requests per second:\s+([0-9.]+))");
  static const std::regex failed(R"(Failed requests:\s+(\d+))");
  std::smatch m;
  if (std::regex_search(r.out, m, failed) && m[1] != "0")
    std::cerr << "warning: ab: " << m[1] << " failed requests\n";
  if (!std::regex_search(r.out, m, re)) {
    std::cerr << "ab failed: " << r.err << "\n";
    return 0;
  }
  return std::stod(m[1]);
}

nlohmann::json ngxtls_load(const std::string& target, int seconds, int c, bool request) {
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
  auto r = run(argv, "", 60 + 10 * seconds);
  return nlohmann::json::parse(r.out).at("targets").at(0).at("load");
}

double phase_rate(const nlohmann::json& load, const std::string& phase, const std::string& key) {
  for (const auto& p : load.at("phases"))
    if (p.at("phase") == phase && p.at("certificate_key") == key)
      return p.at("connections_per_s").get<double>();
  return 0;
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

}  // namespace

int main(int argc, char** argv) {
  int seconds = argc > 1 ? std::atoi(argv[1]) : 3;
  int c = argc > 2 ? std::atoi(argv[2]) : 4;
  int n = argc > 3 ? std::atoi(argv[3]) : 3000;
  temp_dir dir;
  tls::pki_options ro;
  ro.key_type = "rsa";
  auto rsa = tls::make_pki((dir.path() / "rsa").string(), ro);
  auto ec = tls::make_pki((dir.path() / "ec").string(), {});
  int port = free_port();
  std::string conf = "server { listen 127.0.0.1:" + std::to_string(port) +
                     " ssl; server_name localhost; ssl_protocols TLSv1.2 TLSv1.3; "
                     "ssl_certificate " +
                     ec.chain + "; ssl_certificate_key " + ec.leaf_key + "; ssl_certificate " +
                     rsa.chain + "; ssl_certificate_key " + rsa.leaf_key +
                     "; ssl_session_cache shared:S:10m; access_log off; location / { return 200 "
                     "\"ok\\n\"; } }\n";
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(2, conf), no);
  std::string target = "127.0.0.1:" + std::to_string(port);
  std::string url = "https://" + target + "/";

  double ab_ec = ab(url, ecdsa_cipher, n, c), ab_rsa = ab(url, rsa_cipher, n, c);
  double st_ec = s_time(target, false, ecdsa_cipher, seconds);
  double st_rsa = s_time(target, false, rsa_cipher, seconds);
  double st_reuse = s_time(target, true, ecdsa_cipher, seconds);
  auto ours = ngxtls_load(target, seconds, c, false);
  auto ours_req = ngxtls_load(target, seconds, c, true);
  double full_ec = phase_rate(ours, "full_tls12", "ecdsa");
  double full_rsa = phase_rate(ours, "full_tls12", "rsa");
  double resumed = phase_rate(ours, "ticket_tls12", "any");
  double full_any = phase_rate(ours, "full_tls12", "any");
  double req_ec = phase_rate(ours_req, "full_tls12", "ecdsa");
  double req_rsa = phase_rate(ours_req, "full_tls12", "rsa");
  auto ours_one = ngxtls_load(target, seconds, 1, false);
  double one_ec = phase_rate(ours_one, "full_tls12", "ecdsa");
  double one_rsa = phase_rate(ours_one, "full_tls12", "rsa");
  double one_resumed = phase_rate(ours_one, "ticket_tls12", "any");

  std::printf("probe --load bench: TLS 1.2, %d s per phase, concurrency %d (s_time: 1), ab -n %d\n",
              seconds, c, n);
  std::printf("  %-34s %10s %10s %10s\n", "connections/s", "ECDSA", "RSA", "resumed");
  std::printf("  %-34s %10.0f %10.0f %10s\n", "ab (no keep-alive, GET /)", ab_ec, ab_rsa, "-");
  std::printf("  %-34s %10.0f %10.0f %10.0f\n", "openssl s_time -new / -reuse", st_ec, st_rsa,
              st_reuse);
  std::printf("  %-34s %10.0f %10.0f %10.0f  (full, default sigalgs: %.0f)\n",
              "ngxtls probe --load", full_ec, full_rsa, resumed, full_any);
  std::printf("  %-34s %10.0f %10.0f %10s\n", "ngxtls probe --load --request", req_ec, req_rsa,
              "-");
  std::printf("  %-34s %10.0f %10.0f %10.0f\n", "ngxtls probe --load -c 1", one_ec, one_rsa,
              one_resumed);
  std::printf("  client CPU at most: %.0f%% (handshakes), %.0f%% (--request), %.0f%% (-c 1)\n",
              client_cpu(ours) * 100, client_cpu(ours_req) * 100, client_cpu(ours_one) * 100);

  double best_full_tools = std::max(ab_ec, st_ec);
  bool g1 = full_ec >= best_full_tools;
  bool g2 = resumed >= st_reuse;
  double st_rsa_ratio = st_ec > 0 ? st_rsa / st_ec : 0;
  double ab_rsa_ratio = ab_ec > 0 ? ab_rsa / ab_ec : 0;
  double req_rsa_ratio = req_ec > 0 ? req_rsa / req_ec : 0;
  double one_rsa_ratio = one_ec > 0 ? one_rsa / one_ec : 0;
  double st_resumed_ratio = st_ec > 0 ? st_reuse / st_ec : 0;
  double one_resumed_ratio = one_ec > 0 ? one_resumed / one_ec : 0;
  bool g3a = within(req_rsa_ratio, ab_rsa_ratio, 0.15);
  bool g3b = within(one_rsa_ratio, st_rsa_ratio, 0.15);
  bool g4 = within(one_resumed_ratio, st_resumed_ratio, 0.15);
  std::printf("goal: full (ECDSA) %.0f/s >= better of ab and s_time -new %.0f/s (%.2fx): %s\n",
              full_ec, best_full_tools, best_full_tools > 0 ? full_ec / best_full_tools : 0,
              verdict(g1));
  std::printf("goal: resumed %.0f/s >= s_time -reuse %.0f/s (%.2fx): %s\n", resumed, st_reuse,
              st_reuse > 0 ? resumed / st_reuse : 0, verdict(g2));
  std::printf("goal: RSA/ECDSA with --request %.2f within 15%% of ab's %.2f: %s\n", req_rsa_ratio,
              ab_rsa_ratio, verdict(g3a));
  std::printf("goal: RSA/ECDSA at -c 1 %.2f within 15%% of s_time's %.2f: %s\n", one_rsa_ratio,
              st_rsa_ratio, verdict(g3b));
  std::printf("goal: resumed/full at -c 1 %.2f within 15%% of s_time's %.2f: %s\n",
              one_resumed_ratio, st_resumed_ratio, verdict(g4));
  return g1 && g2 && g3a && g3b && g4 ? 0 : 1;
}
