#pragma once
// A real nginx (Debian package, /usr/sbin/nginx) run from a config text in a temporary prefix
// directory, for probe tests, `check --sandbox` tests and benches. No doctest macros here.
//
// Lifetime guarantee: the master runs in the foreground (`-g 'daemon off;'`) as our child, with
// PR_SET_PDEATHSIG = SIGTERM (nginx's fast shutdown stops the workers too) so that it dies with
// the test process; the destructor stops it (SIGTERM, then SIGKILL of master and workers) and
// reaps it. No nginx process outlives the object.

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace ngxtls::test {

/// What to start.
struct nginx_options {
  std::string binary = "/usr/sbin/nginx";  ///< nginx executable
  std::vector<int> wait_ports;   ///< 127.0.0.1 ports that must accept TCP before start() returns
  int start_timeout_ms = 10000;  ///< for start and reload, ms
  int workers = 0;  ///< expected worker count, for reload(); 0 = read from `worker_processes N;`
};

/// The skeleton of an nginx.conf for tests: `worker_processes WORKERS;`, `pid` and `error_log`
/// inside the prefix (relative paths resolve against -p), `events {}`, and `http { BODY }`
/// with access_log off. BODY holds the server blocks.
std::string nginx_conf(int workers, const std::string& http_body,
                       const std::string& main_extra = "");

/// One nginx master and its workers.
class nginx_instance {
 public:
  /// Writes `conf_text` to DIR/nginx.conf in a fresh temp prefix DIR (removed on destruction;
  /// files shared by several instances, such as one ticket key file, live elsewhere), runs
  /// `nginx -t`, then starts `nginx -p DIR/ -c DIR/nginx.conf -g 'daemon off;'` and waits until
  /// every port of options.wait_ports accepts TCP on 127.0.0.1. Throws std::runtime_error
  /// with nginx's stderr and error log when the test or the start fails or times out.
  explicit nginx_instance(const std::string& conf_text, nginx_options options = {});
  ~nginx_instance();
  nginx_instance(const nginx_instance&) = delete;
  nginx_instance& operator=(const nginx_instance&) = delete;

  /// Optionally replaces nginx.conf with `new_conf_text` (empty = keep it), checks it with
  /// `nginx -t`, runs `nginx -s reload` with the same -p/-c, and returns once every worker of
  /// the old generation has exited and the expected number of new workers runs: from then on
  /// every connection is served by the new configuration. Throws std::runtime_error when the
  /// new config is rejected or the switch does not finish within start_timeout_ms.
  void reload(const std::string& new_conf_text = "");

  /// Stops nginx (SIGTERM = fast shutdown; SIGKILL of master and workers after 5 s) and reaps
  /// it. Idempotent; the destructor calls it.
  void stop();

  /// `nginx -t -p DIR/ -c DIR/nginx.conf`: exit code, and the [warn]/[emerg] lines on stderr.
  command_result test_config() const;

  /// The prefix directory (ends without a slash) and the config path.
  const std::filesystem::path& prefix() const { return prefix_; }
  std::filesystem::path conf_path() const { return prefix_ / "nginx.conf"; }
  /// Writes a file inside the prefix (certificates, key files, includes); returns its path.
  std::filesystem::path write(const std::string& name, const std::string& content) const;
  /// The master's pid (-1 when stopped) and the current worker pids.
  pid_t master_pid() const { return master_; }
  std::vector<pid_t> worker_pids() const;
  /// Contents of DIR/error.log and of nginx's own stderr, for diagnostics.
  std::string error_log() const;
  /// True while the master runs.
  bool running();

 private:
  void wait_ready(const std::vector<pid_t>& old_workers, int expected_workers);
  std::unique_ptr<temp_dir> own_dir_;
  std::filesystem::path prefix_;
  nginx_options options_;
  pid_t master_ = -1;
  int workers_ = 1;
};

/// Pids of the processes whose parent is `parent` (read from /proc/PID/stat).
std::vector<pid_t> child_pids(pid_t parent);

/// True when a TCP connect to 127.0.0.1:`port` succeeds right now.
bool port_accepts(int port);

}  // namespace ngxtls::test
