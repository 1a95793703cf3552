#include "support/ocsp_responder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ngxtls::test {
namespace {

// Stops and reaps `pid`: SIGTERM, then SIGKILL after a grace period.
void stop(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || r < 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace

std::string ocsp_responder::url_for(int port) {
  return "http://127.0.0.1:" + std::to_string(port) + "/";
}

ocsp_responder::ocsp_responder(const ngxtls::tls::pki_paths& pki, int port, int max_requests,
                               int start_timeout_ms)
    : port_(port) {
  if (pki.ocsp_index.empty() || pki.issuer.empty() || pki.issuer_key.empty())
    throw std::runtime_error("ocsp_responder: the PKI has no issuer or index (self-signed leaf?)");
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ngxtls-ocsp-XXXXXX.log";
  int log_fd = ::mkostemps(tmpl.data(), 4, O_CLOEXEC);
  if (log_fd < 0) throw std::runtime_error("ocsp_responder: cannot create a log file");
  log_path_ = tmpl;

  std::vector<std::string> argv = {
      "openssl",  "ocsp",     "-index",     pki.ocsp_index, "-port", std::to_string(port),
      "-rsigner", pki.issuer, "-rkey",      pki.issuer_key, "-CA",   pki.issuer,
      "-ndays",   "1",        "-ignore_err"};
  if (max_requests > 0) {
    argv.push_back("-nrequest");
    argv.push_back(std::to_string(max_requests));
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    throw std::runtime_error("ocsp_responder: fork failed");
  }
  if (pid == 0) {
    int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(log_fd);
  pid_ = pid;

  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(start_timeout_ms);
  for (;;) {
    // Readiness comes from the log, not from a test connection: the single-process
    // responder of OpenSSL 3.0 hangs on a connection that closes without a request, so
    // a connect probe would block every later client.
    if (log().find("waiting for OCSP client connections") != std::string::npos) return;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      std::string why = log();
      ::unlink(log_path_.c_str());
      throw std::runtime_error("ocsp_responder: openssl ocsp exited: " + why);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::string why = log();
      stop(pid_);
      pid_ = -1;
      ::unlink(log_path_.c_str());
      throw std::runtime_error("ocsp_responder: not listening on port " + std::to_string(port_) +
                               ": " + why);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ocsp_responder::~ocsp_responder() {
  stop(pid_);
  if (!log_path_.empty()) ::unlink(log_path_.c_str());
}

std::string ocsp_responder::log() const {
  std::ifstream f(log_path_, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace ngxtls::test
