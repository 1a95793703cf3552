// Prober scale (figures, not a timed test): many targets with bounded memory. One local nginx with
// a wildcard server_name; N targets (distinct server names sent as SNI, all dialled at the one
// port through --connect) in a --targets file; `ngxtls probe --targets FILE --parallel P -n A`
// runs as a child. Prints wall time, the child's peak RSS (wait4 rusage; also
// getrusage(RUSAGE_CHILDREN), which covers every child reaped so far) and how many targets
// were probed without error.
// Usage: bench_probe_many [targets, default 1000] [-n attempts, default 4] [--parallel, default 64]
//                         [--format, default json; text or prometheus show the memory the
//                          JSON document adds, but then targets are not counted]
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/nginx_instance.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

int main(int argc, char** argv) {
  const int n_targets = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int attempts = argc > 2 ? std::atoi(argv[2]) : 4;
  const int parallel = argc > 3 ? std::atoi(argv[3]) : 64;
  const std::string format = argc > 4 ? argv[4] : "json";

  temp_dir dir;
  tls::pki_options po;
  po.dns_names = {"*.bench.test"};
  tls::pki_paths pki = tls::make_pki((dir.path() / "pki").string(), po);
  const int port = free_port();
  const std::string server =
      "server {\n  listen 127.0.0.1:" + std::to_string(port) +
      " ssl;\n  server_name *.bench.test;\n  ssl_protocols TLSv1.2 TLSv1.3;\n"
      "  ssl_certificate " +
      pki.chain + ";\n  ssl_certificate_key " + pki.leaf_key +
      ";\n  ssl_session_cache shared:S:10m;\n  location / { return 200 \"ok\\n\"; }\n}\n";
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(2, server), no);

  const auto targets_file = dir.path() / "targets.txt";
  {
    std::ofstream f(targets_file);
    for (int i = 0; i < n_targets; ++i) f << "host" << i << ".bench.test:" << port << "\n";
  }
  const auto json_file = dir.path() / "out.json";
  const std::vector<std::string> args{ngxtls_binary(),
                                      "probe",
                                      "--targets",
                                      targets_file.string(),
                                      "--connect",
                                      "127.0.0.1:" + std::to_string(port),
                                      "--parallel",
                                      std::to_string(parallel),
                                      "-n",
                                      std::to_string(attempts),
                                      "--no-ocsp",
                                      "--format",
                                      "json"};
  std::string cmd;
  for (const auto& a : args) cmd += a + " ";
  std::cout << "command: " << cmd << "> " << json_file.string() << "\n";

  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("fork");
    return 1;
  }
  if (pid == 0) {
    int fd = ::open(json_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 1);
    std::vector<char*> cargv;
    for (const auto& a : args) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    ::execv(cargv[0], cargv.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage children{};
  ::getrusage(RUSAGE_CHILDREN, &children);

  int ok = 0, failed = 0;
  long attempts_total = 0, resumed_total = 0;
  try {
    if (format != "json") throw std::runtime_error("not json: targets not counted");
    auto j = nlohmann::json::parse(read_file(json_file));
    for (const auto& t : j.at("targets")) {
      if (t.at("error").is_null())
        ++ok;
      else
        ++failed;
      for (const auto& p : t.at("protocols")) {
        attempts_total += p.value("attempts", 0);
        resumed_total += p.value("resumed", 0);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "cannot read the probe's JSON: " << e.what() << "\n";
  }
  std::printf("targets: %d (-n %d, --parallel %d), exit code %d\n", n_targets, attempts, parallel,
              WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  std::printf("wall time: %.2f s (%.1f targets/s)\n", wall_s, n_targets / wall_s);
  std::printf("probe user+sys CPU: %.2f s\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                                                  ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
  std::printf("peak RSS of the probe (wait4): %.1f MB\n", ru.ru_maxrss / 1024.0);
  std::printf("peak RSS of any child so far (RUSAGE_CHILDREN): %.1f MB\n",
              children.ru_maxrss / 1024.0);
  std::printf("targets without error: %d, with error: %d; resumption attempts %ld, resumed %ld\n",
              ok, failed, attempts_total, resumed_total);
  return ok == n_targets ? 0 : 1;
}
