#pragma once
// Every test runs nginx through this file (`nginx -t`, `-T`, `-s reload`, and the long-running
// master of nginx_instance), so that nothing outside the test's own directories changes.
//
// Why: as root, nginx creates its compiled-in temp directories (Debian: /var/lib/nginx/body,
// proxy, fastcgi, uwsgi, scgi) and chowns them to the worker user (`nobody` when the config names
// no `user`) even under `nginx -t`, and opens its compiled-in log, pid and lock paths. A config
// with an http{} block and no *_temp_path directives would so hand a production nginx's body
// temp directory to another user on the same host.
//
// How: the child that execs nginx enters a private mount namespace (unshare(CLONE_NEWNS), with
// private propagation so nothing leaks back) and mounts a fresh tmpfs over each place where
// that binary keeps state, read from its `nginx -V`: the --http-*-temp-path directories, the
// directories of --pid-path, --lock-path, --error-log-path and --http-log-path (relative ones
// resolve against the command's -p, else --prefix; paths inside the -p directory are the test's
// own and are left alone), plus /var/lib/nginx, /var/log/nginx and /run/nginx*. A directory that
// also holds other things (/run for /run/nginx.pid, /run/lock for the lock file, an install
// prefix for its client_body_temp) gets a tmpfs into which every other entry is bind-mounted
// back, so only nginx's own names are fresh. Workers inherit the namespace; the mounts vanish
// with the last process in it. Without root (no CAP_SYS_ADMIN) nothing is mounted: nginx then
// cannot chown, and the command runs as it is.

#include <sys/types.h>

#include <string>
#include <vector>

#include "support/process.hpp"

namespace ngxtls::test {

/// The mounts that keep one nginx command's writes off the host, prepared in the parent (which
/// runs `nginx -V` and lists directories) and applied in the forked child before exec, where
/// only system calls run (safe after fork in a process with threads).
class nginx_isolation {
 public:
  /// Prepares the mounts for `argv` (argv[0] = the nginx binary, looked up on PATH when it has no
  /// slash; its -p is read from argv). With `share_namespace_of` > 0 the child instead joins the
  /// mount namespace of that running nginx master (for `nginx -s reload`, whose pid file may lie
  /// in that master's private /run).
  explicit nginx_isolation(const std::vector<std::string>& argv, pid_t share_namespace_of = 0);

  /// In the forked child, before exec: enters the namespace and mounts. Returns false (errno
  /// set) when a step failed; the child must then exit without running nginx.
  bool apply() const noexcept;

  /// The directories covered by a tmpfs, in mount order, each as "fresh DIR" (nothing of it
  /// stays visible) or "shadow DIR -NAME..." (everything but NAME... bound back; a NAME that is
  /// a directory is there, empty). Empty when not root.
  std::vector<std::string> describe() const;

 private:
  struct entry {
    std::string name;         ///< entry of the covered directory
    std::string target;       ///< DIR/name, where it is bound back
    std::string link_target;  ///< for a symlink: what it points to
    bool is_dir = false;
    bool is_link = false;
    bool empty = false;  ///< a directory of nginx's own: made anew, empty, nothing bound
  };
  struct cover {
    std::string dir;                 ///< the directory the tmpfs goes over
    std::vector<std::string> fresh;  ///< names left out (nginx's own), for describe()
    std::vector<entry> bind_back;    ///< entries mounted back into the tmpfs
  };
  bool active_ = false;
  std::string join_ns_path_;  ///< /proc/PID/ns/mnt to join, or ""
  std::vector<cover> covers_;
};

/// The state paths `binary` writes outside a -p prefix, from its `nginx -V` (cached per binary):
/// the five temp directories, pid, lock, error log (unless "stderr") and access log, each
/// absolute (relative ones joined to `prefix`, or to --prefix when `prefix` is empty).
std::vector<std::string> nginx_state_paths(const std::string& binary, const std::string& prefix);

/// Runs an nginx command like run() (argv[0] = nginx binary), isolated by nginx_isolation.
/// Every test's `nginx -t`, `nginx -T` and `nginx -s` goes through here.
command_result run_nginx(const std::vector<std::string>& argv, const std::string& input = "",
                         int timeout_s = 120, pid_t share_namespace_of = 0);

}  // namespace ngxtls::test
