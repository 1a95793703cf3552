#pragma once
// Processes of `check --sandbox`: running `nginx -t`, and a keeper process that owns the nginx
// masters so that none outlives ngxtls, also when ngxtls is killed with SIGKILL.
//
// Why a keeper: nginx workers do not die with their master, and ngxtls cannot run code after
// SIGKILL. The keeper is a fork of ngxtls (it never execs) and the parent of every master.
// - With CAP_SYS_ADMIN (root in CI) a child of ngxtls (which dies with it: PR_SET_PDEATHSIG)
//   makes a new PID namespace (unshare(CLONE_NEWPID)) and forks the keeper as its PID 1; when
//   PID 1 dies the kernel kills every process of the namespace (pid_namespaces(7)). The keeper
//   too has PR_SET_PDEATHSIG, so ngxtls's death, however it happens, ends it and all nginx.
// - Without it, each master leads its own process group (workers inherit it) and the keeper is
//   a child subreaper (PR_SET_CHILD_SUBREAPER); on ngxtls's death (PDEATHSIG SIGTERM, or EOF on
//   a pipe only ngxtls holds) it SIGKILLs those groups and its remaining descendants.
//   The environment variable NGXTLS_SANDBOX_NO_PIDNS=1 forces this fallback.
// Either way the keeper then removes the run directory. What a keeper could not clean (it was
// SIGKILLed too) a later run sweeps: see sweep_stale_runs.

#include <sys/types.h>

#include <string>
#include <vector>

namespace ngxtls::check {

/// Result of a finished command.
struct command_output {
  int exit_code = -1;  ///< exit status, or 128 + signal when it was killed
  std::string out;     ///< stdout, at most 1 MiB kept
  std::string err;     ///< stderr, at most 1 MiB kept
};

/// Runs argv (argv[0] an absolute path, or looked up on PATH) with stdin from /dev/null and
/// waits at most `timeout_ms`, then SIGKILLs it (exit_code 137). Throws ngxtls::target_error
/// when it cannot be started.
command_output run_command(const std::vector<std::string>& argv, int timeout_ms);

/// `name` if it contains a '/', else its first match on $PATH; then /usr/sbin/NAME and
/// /sbin/NAME (nginx lives in sbin, which a non-root PATH often lacks). Empty when none is an
/// executable file.
std::string find_executable(const std::string& name);

/// Pids of the processes whose parent is `parent`, from /proc/PID/stat (the parent's pid as
/// seen from this process's PID namespace).
std::vector<pid_t> child_pids(pid_t parent);

/// Owns the nginx masters of one sandbox run. Not copyable. Destruction tears everything down.
class keeper {
 public:
  /// Forks the keeper, which starts one master per argv in `masters` (stdout and stderr to
  /// `log_paths[i]`) and watches ngxtls. `run_dir` is removed by the keeper when it ends.
  /// Throws ngxtls::target_error when fork fails.
  keeper(const std::vector<std::vector<std::string>>& masters, const std::vector<std::string>& log_paths,
         const std::string& run_dir);
  ~keeper();
  keeper(const keeper&) = delete;
  keeper& operator=(const keeper&) = delete;

  /// The keeper's pid (as seen by ngxtls; a grandchild).
  pid_t pid() const { return pid_; }
  /// True when the keeper runs in its own PID namespace (the kernel-enforced teardown).
  bool pid_namespace() const { return namespaced_; }
  /// The masters' pids as seen by ngxtls (children of the keeper); fewer than started when one
  /// has exited.
  std::vector<pid_t> masters() const { return child_pids(pid_); }
  /// Stops every nginx process (SIGKILL: the sandbox is throwaway) and reaps the keeper; waits
  /// at most 5 s. Idempotent; the destructor calls it.
  void stop();

 private:
  pid_t pid_ = -1;     ///< the keeper
  pid_t middle_ = -1;  ///< our child that made the namespace and waits for the keeper
  int life_fd_ = -1;  ///< write end of the pipe whose EOF tells the keeper that ngxtls is gone
  bool namespaced_ = false;
};

/// Removes run directories under `base_dir` left by sandbox runs whose ngxtls process is gone
/// (SIGKILLed together with its keeper): SIGKILLs nginx processes whose command line names the
/// run directory (masters), or that sit in a process group the run recorded (file `pgids`)
/// whose leader is such a master or gone (orphaned workers), then deletes the directory. Only
/// directories and `pgids` files owned by this user and not group/other-writable count.
/// Returns how many runs it removed. Never throws.
int sweep_stale_runs(const std::string& base_dir);

/// Writes the identity of this process (pid and start time from /proc/self/stat) to
/// `run_dir`/owner, so that sweep_stale_runs can tell a live run from a dead one even after pid
/// reuse. Throws ngxtls::target_error when the file cannot be written.
void write_owner(const std::string& run_dir);

}  // namespace ngxtls::check
