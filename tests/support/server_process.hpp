#pragma once
// A background server process for tests (openssl s_server, Python or Java TLS servers, hostile
// servers): started with PR_SET_PDEATHSIG so it dies with the test process, stopped and reaped
// on destruction. No doctest macros here.

#include <sys/types.h>

#include <string>
#include <vector>

namespace ngxtls::test {

/// Runs `argv` (argv[0] looked up on PATH) in the background with stdout and stderr appended to
/// `log_path`, stdin from /dev/null. When `port` > 0 the constructor returns once 127.0.0.1:port
/// accepts TCP (within `start_timeout_ms`), else throws std::runtime_error with the log.
class server_process {
 public:
  server_process(const std::vector<std::string>& argv, const std::string& log_path, int port = 0,
                 int start_timeout_ms = 15000);
  /// SIGTERM, then SIGKILL after 2 s; reaps the process.
  ~server_process();
  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;
  /// The process id (-1 once stopped).
  pid_t pid() const { return pid_; }
  /// What the process wrote so far.
  std::string log() const;
  /// Stops it now (idempotent).
  void stop();
  /// Waits up to `timeout_ms` for the process to exit by itself (after a signal the test
  /// sent) and reaps it: its exit code, 128+N when killed by signal N, -1 when it still runs.
  int wait_exit(int timeout_ms);

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

}  // namespace ngxtls::test
