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

#include <sys/resource.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace ngxtls::sandbox {

/// Result of a finished command.
struct command_output {
  int exit_code = -1;  ///< exit status, or 128 + signal when it was killed
  std::string out;     ///< stdout, at most 1 MiB kept
  std::string err;     ///< stderr, at most 1 MiB kept
};

/// An unprivileged identity for the sandbox nginx when ngxtls runs as root: a uid and gid
/// (the same number) that no account in /etc/passwd or /etc/group and no running process
/// uses, chosen per run, so that no file of the host and no other sandbox is open to it.
struct sandbox_identity {
  bool drop = false;  ///< false: nginx runs as the invoking user (ngxtls is not root)
  uid_t uid = 0;
  gid_t gid = 0;
};

/// How a child (nginx -t, an nginx master) is set up between fork and exec, in this order:
/// working directory (entered while still privileged), RLIMIT_NOFILE, then the identity
/// (supplementary groups dropped, gid, uid), then the parent-death signal (a credential
/// change clears it, so it is set after).
struct child_setup {
  std::string cwd;  ///< empty: unchanged
  sandbox_identity identity;
  rlim_t nofile = 0;  ///< soft RLIMIT_NOFILE at least this (capped by the hard limit); 0: unchanged
};

/// Picks a sandbox_identity: drop=false when the effective uid is not 0. The uid is random in a
/// range the process's user namespace maps (/proc/self/uid_map), checked against the account
/// files (read directly: no NSS module gets asked) and /proc. Throws ngxtls::target_error when
/// none is free.
sandbox_identity choose_sandbox_identity();

/// Moves the calling thread (call it on the main thread before any other thread exists: the
/// namespace is per thread, and threads created later inherit it) into a new network namespace
/// with only `lo`, brought up: what runs afterwards reaches 127.0.0.1 and nothing else.
/// Returns false with `why` set when it cannot (not root, no CAP_SYS_ADMIN, other threads
/// already running); throws ngxtls::target_error when the namespace was made but `lo` cannot
/// be brought up (the process would then have no network at all).
bool enter_loopback_network_namespace(std::string& why);

/// Runs argv (argv[0] an absolute path, or looked up on PATH) with stdin from /dev/null and
/// waits at most `timeout_ms`, then SIGKILLs it (exit_code 137). `setup` is applied in the
/// child before exec (exit code 126 when it fails). Throws ngxtls::target_error when it cannot
/// be started.
command_output run_command(const std::vector<std::string>& argv, int timeout_ms,
                           const child_setup& setup = {});

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
  /// `log_paths[i]`, `setup` applied before exec) and watches ngxtls. `run_dir` is removed by
  /// the keeper when it ends, unless stop(true) asked it to keep it.
  /// Throws ngxtls::target_error when fork fails.
  keeper(const std::vector<std::vector<std::string>>& masters,
         const std::vector<std::string>& log_paths, const std::string& run_dir,
         const child_setup& setup = {});
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
  /// at most 5 s. The keeper removes the run directory unless `keep_run_dir` (a restart in the
  /// same directory). Idempotent; the destructor calls it.
  void stop(bool keep_run_dir = false);

 private:
  pid_t pid_ = -1;     ///< the keeper
  pid_t middle_ = -1;  ///< our child that made the namespace and waits for the keeper
  int life_fd_ = -1;   ///< write end of the pipe whose EOF tells the keeper that ngxtls is gone
  bool namespaced_ = false;
};

/// Removes run directories under `base_dir` left by sandbox runs whose ngxtls process is gone
/// (SIGKILLed together with its keeper): SIGKILLs nginx processes whose command line names the
/// run directory or whose working directory lies in it (masters and workers), or that sit in a
/// process group the run recorded (file `pgids`) whose leader is such a master or gone
/// (orphaned workers), then deletes the directory. A run's owner is read from its name
/// (run_dir_template) or, for older runs, its `owner` file. Only directories and `pgids` files
/// owned by this user and not group/other-writable count: another user's runs are left alone.
/// Returns how many runs it removed. Never throws.
int sweep_stale_runs(const std::string& base_dir);

/// The mkdtemp(3) template of a new run directory under `base_dir`:
/// "run-PID-STARTTIME-XXXXXX", this process's pid and start time (/proc/self/stat) in the name
/// itself, so that no moment exists at which a run directory does not say whose it is.
std::string run_dir_template(const std::string& base_dir);

/// Writes the identity of this process (pid and start time from /proc/self/stat) to
/// `run_dir`/owner, so that sweep_stale_runs can tell a live run from a dead one even after pid
/// reuse. Throws ngxtls::target_error when the file cannot be written.
void write_owner(const std::string& run_dir);

}  // namespace ngxtls::sandbox
