#include "sandbox/sandbox_process.hpp"

#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "base/error.hpp"

namespace fs = std::filesystem;

namespace ngxtls::sandbox {

namespace {

using clock_type = std::chrono::steady_clock;

// Fields of /proc/PID/stat after the command name: state ppid pgrp session ...; field 22 is
// the start time in clock ticks since boot. comm may hold spaces and parentheses.
struct proc_stat {
  std::string comm;
  pid_t ppid = 0, pgrp = 0;
  unsigned long long start = 0;
};

bool read_stat(pid_t pid, proc_stat& st) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return false;
  auto open = line.find('(');
  auto close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  st.comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 2));
  std::string state;
  rest >> state >> st.ppid >> st.pgrp;
  std::string skip;
  // Fields 6..21 (16 of them), then starttime (22).
  for (int i = 0; i < 16 && rest; ++i) rest >> skip;
  rest >> st.start;
  return static_cast<bool>(in) || !line.empty();
}

std::vector<pid_t> all_pids() {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string n = e.path().filename().string();
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) continue;
    out.push_back(static_cast<pid_t>(std::stol(n)));
  }
  return out;
}

std::string read_small(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s;
  char buf[4096];
  while (in && s.size() < (1u << 16)) {
    in.read(buf, sizeof buf);
    s.append(buf, static_cast<std::size_t>(in.gcount()));
  }
  return s;
}

void write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// In a forked child: the working directory while still privileged, the fd limit, then the
// identity. Writes why to fd 2 and returns false when a step fails.
bool apply_setup(const child_setup& setup) {
  auto fail = [](const char* what) {
    std::string m = std::string("ngxtls sandbox: ") + what + ": " + std::strerror(errno) + "\n";
    write_all(2, m);
    return false;
  };
  if (!setup.cwd.empty() && ::chdir(setup.cwd.c_str()) != 0) return fail("chdir");
  if (setup.nofile > 0) {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < setup.nofile) {
      rl.rlim_cur =
          rl.rlim_max == RLIM_INFINITY ? setup.nofile : std::min<rlim_t>(setup.nofile, rl.rlim_max);
      ::setrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  if (setup.identity.drop) {
    if (::setgroups(0, nullptr) != 0) return fail("setgroups");
    if (::setresgid(setup.identity.gid, setup.identity.gid, setup.identity.gid) != 0)
      return fail("setresgid");
    if (::setresuid(setup.identity.uid, setup.identity.uid, setup.identity.uid) != 0)
      return fail("setresuid");
    if (::geteuid() != setup.identity.uid || ::getuid() != setup.identity.uid)
      return fail("uid check");
  }
  return true;
}

// The keeper's body: start the masters, wait for ngxtls to go, kill everything, clean up.
[[noreturn]] void keeper_main(const std::vector<std::vector<std::string>>& masters,
                              const std::vector<std::string>& logs, const std::string& run_dir,
                              const child_setup& setup, int life_fd, pid_t parent, bool ns) {
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  // In a new PID namespace getppid() is 0 for PID 1; the pipe's EOF covers that case.
  if (!ns && ::getppid() != parent) ::raise(SIGTERM);
  // Out of ngxtls's process group: a CI runner that kills the whole group on a timeout must
  // not take the keeper along before it has cleaned up.
  ::setpgid(0, 0);
  if (!ns) ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Ctrl-C reaches the whole foreground process group: the keeper must outlive ngxtls to clean.
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGQUIT, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sfd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

  std::vector<pid_t> pgids;
  const pid_t keeper_pid = ::getpid();
  for (std::size_t i = 0; i < masters.size(); ++i) {
    auto argv = c_argv(masters[i]);
    pid_t m = ::fork();
    if (m == 0) {
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      for (int s : {SIGINT, SIGQUIT, SIGHUP, SIGPIPE}) ::signal(s, SIG_DFL);
      if (!ns) ::setpgid(0, 0);
      int in = ::open("/dev/null", O_RDONLY);
      int log = ::open(logs[i].c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
      if (in >= 0) ::dup2(in, 0);
      if (log >= 0) {
        ::dup2(log, 1);
        ::dup2(log, 2);
      }
      if (!apply_setup(setup)) _exit(126);
      // In a namespace the kernel takes the workers along; without one a master must stop its
      // workers itself, which nginx does on SIGTERM (fast shutdown), not on SIGKILL. Set after
      // the identity change, which clears it.
      ::prctl(PR_SET_PDEATHSIG, ns ? SIGKILL : SIGTERM);
      if (::getppid() != keeper_pid) _exit(0);
      ::execv(argv[0], argv.data());
      write_all(2, std::string("cannot run ") + argv[0] + ": " + std::strerror(errno) + "\n");
      _exit(127);
    }
    if (m > 0 && !ns) {
      ::setpgid(m, m);
      pgids.push_back(m);
    }
  }
  if (!pgids.empty()) {
    std::string text;
    for (pid_t p : pgids) text += std::to_string(p) + "\n";
    int fd = ::open((run_dir + "/pgids").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      write_all(fd, text);
      ::close(fd);
    }
  }

  bool done = false, keep_run_dir = false;
  while (!done) {
    pollfd p[2] = {{life_fd, POLLIN, 0}, {sfd, POLLIN, 0}};
    int n = ::poll(p, sfd >= 0 ? 2 : 1, 1000);
    if (n < 0 && errno != EINTR) break;
    if (p[0].revents) {
      char c = 0;
      // 'K': ngxtls restarts in the same directory. EOF: ngxtls closed the pipe or died.
      const ssize_t got = ::read(life_fd, &c, 1);
      if (got == 1 && c == 'K') keep_run_dir = true;
      if (got <= 0) done = true;
    }
    if (sfd >= 0 && (p[1].revents & POLLIN)) {
      signalfd_siginfo si;
      while (::read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
        if (si.ssi_signo == SIGTERM) done = true;
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (sfd < 0 && !ns && ::getppid() != parent) done = true;
  }

  if (ns) {
    ::kill(-1, SIGKILL);  // PID 1 of the namespace: every other process in it
  } else {
    for (pid_t g : pgids) ::kill(-g, SIGKILL);
    // Workers whose master died were reparented to us (subreaper): kill them too.
    for (int round = 0; round < 100; ++round) {
      auto kids = child_pids(::getpid());
      if (kids.empty()) break;
      for (pid_t k : kids) ::kill(k, SIGKILL);
      while (::waitpid(-1, nullptr, WNOHANG) > 0) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  while (::waitpid(-1, nullptr, 0) > 0) {
  }
  std::error_code ec;
  if (!keep_run_dir) fs::remove_all(run_dir, ec);
  _exit(0);
}

}  // namespace

command_output run_command(const std::vector<std::string>& argv, int timeout_ms,
                           const child_setup& setup) {
  if (argv.empty()) throw target_error("run_command: empty argv");
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    throw target_error(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw target_error(std::string("pipe: ") + std::strerror(errno));
  }
  auto args = c_argv(argv);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    throw target_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    int in = ::open("/dev/null", O_RDONLY);
    if (in >= 0) ::dup2(in, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    if (!apply_setup(setup)) _exit(126);
    // After the identity change, which clears it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    if (argv[0].find('/') != std::string::npos)
      ::execv(args[0], args.data());
    else
      ::execvp(args[0], args.data());
    write_all(2, "cannot run " + argv[0] + ": " + std::strerror(errno) + "\n");
    _exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  command_output r;
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
  bool out_open = true, err_open = true, killed = false;
  char buf[8192];
  while (out_open || err_open) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    pollfd p[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                   {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    int n = ::poll(p, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (!p[i].revents) continue;
      ssize_t got = ::read(i == 0 ? out_pipe[0] : err_pipe[0], buf, sizeof buf);
      if (got <= 0) {
        (i == 0 ? out_open : err_open) = false;
        continue;
      }
      std::string& dst = i == 0 ? r.out : r.err;
      if (dst.size() < (1u << 20)) dst.append(buf, static_cast<std::size_t>(got));
    }
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  if (!killed) {
    // Output closed; the process may still linger a moment (or forever: bound it too).
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (clock_type::now() > deadline) {
        ::kill(pid, SIGKILL);
        killed = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (killed) ::waitpid(pid, &status, 0);
  if (WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r.exit_code = 128 + WTERMSIG(status);
  return r;
}

std::string find_executable(const std::string& name) {
  auto ok = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return ok(name) ? name : "";
  if (const char* path = std::getenv("PATH")) {
    std::string all = path;
    std::size_t start = 0;
    while (start <= all.size()) {
      auto end = all.find(':', start);
      if (end == std::string::npos) end = all.size();
      std::string dir = all.substr(start, end - start);
      if (!dir.empty() && ok(dir + "/" + name)) return dir + "/" + name;
      start = end + 1;
    }
  }
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/local/sbin/"})
    if (ok(dir + name)) return dir + name;
  return "";
}

std::vector<pid_t> child_pids(pid_t parent) {
  std::vector<pid_t> out;
  if (parent <= 0) return out;
  for (pid_t p : all_pids()) {
    proc_stat st;
    if (read_stat(p, st) && st.ppid == parent) out.push_back(p);
  }
  return out;
}

keeper::keeper(const std::vector<std::vector<std::string>>& masters,
               const std::vector<std::string>& logs, const std::string& run_dir,
               const child_setup& setup) {
  int life[2], report[2];
  if (::pipe2(life, O_CLOEXEC) != 0)
    throw target_error(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(report, O_CLOEXEC) != 0) {
    ::close(life[0]);
    ::close(life[1]);
    throw target_error(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t self = ::getpid();
  // NGXTLS_SANDBOX_NO_PIDNS=1 forces the fallback (tests exercise both).
  const char* no_ns_env = std::getenv("NGXTLS_SANDBOX_NO_PIDNS");
  const bool no_ns = no_ns_env && *no_ns_env && std::string(no_ns_env) != "0";
  // An intermediate child makes the namespace, so that ngxtls's own later children (nginx -t,
  // the next keeper) stay in the ordinary one; it dies with ngxtls (PDEATHSIG) and the keeper
  // with it.
  pid_t g = ::fork();
  if (g < 0) {
    for (int fd : {life[0], life[1], report[0], report[1]}) ::close(fd);
    throw target_error(std::string("fork: ") + std::strerror(errno));
  }
  if (g == 0) {
    ::close(life[1]);
    ::close(report[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != self) _exit(0);
    const bool ns = !no_ns && ::unshare(CLONE_NEWPID) == 0;
    const pid_t me = ::getpid();
    pid_t k = ::fork();
    if (k == 0) {
      ::close(report[1]);
      keeper_main(masters, logs, run_dir, setup, life[0], me, ns);
    }
    long msg[2] = {static_cast<long>(k), ns ? 1L : 0L};
    ssize_t w = ::write(report[1], msg, sizeof msg);
    (void)w;
    ::close(report[1]);
    ::close(life[0]);
    if (k > 0) ::waitpid(k, nullptr, 0);
    _exit(0);
  }
  ::close(life[0]);
  ::close(report[1]);
  long msg[2] = {-1, 0};
  ssize_t got = 0;
  do {
    got = ::read(report[0], msg, sizeof msg);
  } while (got < 0 && errno == EINTR);
  ::close(report[0]);
  life_fd_ = life[1];
  middle_ = g;
  if (got != static_cast<ssize_t>(sizeof msg) || msg[0] <= 0) {
    stop();
    throw target_error("sandbox: could not start the keeper process");
  }
  pid_ = static_cast<pid_t>(msg[0]);
  namespaced_ = msg[1] != 0;
}

keeper::~keeper() {
  stop();
}

void keeper::stop(bool keep_run_dir) {
  if (life_fd_ >= 0) {
    if (keep_run_dir) {
      const char k = 'K';
      ssize_t w = ::write(life_fd_, &k, 1);
      (void)w;
    }
    ::close(life_fd_);  // EOF: the keeper kills every nginx, removes the run directory, exits
    life_fd_ = -1;
  }
  if (middle_ <= 0) return;
  const auto deadline = clock_type::now() + std::chrono::seconds(5);
  int status = 0;
  while (::waitpid(middle_, &status, WNOHANG) == 0) {
    if (clock_type::now() > deadline) {
      if (pid_ > 0) ::kill(pid_, SIGKILL);  // in a PID namespace this takes every nginx with it
      ::kill(middle_, SIGKILL);
      ::waitpid(middle_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  middle_ = -1;
  pid_ = -1;
}

sandbox_identity choose_sandbox_identity() {
  sandbox_identity id;
  if (::geteuid() != 0) return id;
  // Ranges this user namespace maps (inside, outside, count): a uid outside them cannot be set.
  auto ranges = [](const char* path) {
    std::vector<std::pair<unsigned long long, unsigned long long>> out;  // first, count
    std::istringstream in(read_small(path));
    for (unsigned long long inside, outside, count; in >> inside >> outside >> count;)
      out.push_back({inside, count});
    return out;
  };
  const auto uids = ranges("/proc/self/uid_map"), gids = ranges("/proc/self/gid_map");
  auto mapped = [](const auto& rs, unsigned long long v) {
    for (const auto& [first, count] : rs)
      if (v >= first && v - first < count) return true;
    return false;
  };
  // Numbers the account files name (third field), read without NSS (no directory service is asked).
  auto named = [](const char* path) {
    std::set<unsigned long long> out;
    std::ifstream f(path);
    for (std::string line; std::getline(f, line);) {
      std::istringstream fields(line);
      std::string name, pw, num;
      if (std::getline(fields, name, ':') && std::getline(fields, pw, ':') &&
          std::getline(fields, num, ':'))
        try {
          out.insert(std::stoull(num));
        } catch (const std::exception&) {
          continue;  // a malformed line names no id
        }
    }
    return out;
  };
  const auto used_uids = named("/etc/passwd"), used_gids = named("/etc/group");
  std::set<unsigned long long> running;
  for (pid_t p : all_pids()) {
    struct stat st {};
    if (::stat(("/proc/" + std::to_string(p)).c_str(), &st) == 0) running.insert(st.st_uid);
  }
  // Candidates: far above any account (useradd stops at 60000, systemd's dynamic users at
  // 65519), below 2^31 (some tools read uids as signed), inside the mapped ranges.
  std::vector<std::pair<unsigned long long, unsigned long long>> spans;  // [lo, hi]
  for (const auto& [first, count] : uids) {
    const unsigned long long lo = std::max<unsigned long long>(first, 100000);
    const unsigned long long hi = std::min<unsigned long long>(first + count - 1, 0x7ffffffeULL);
    if (lo <= hi) spans.push_back({lo, hi});
  }
  std::mt19937_64 rng(std::random_device{}());
  for (int attempt = 0; attempt < 4096 && !spans.empty(); ++attempt) {
    const auto& [lo, hi] = spans[rng() % spans.size()];
    const unsigned long long v = lo + rng() % (hi - lo + 1);
    if (!mapped(gids, v) || used_uids.count(v) || used_gids.count(v) || running.count(v)) continue;
    id.drop = true;
    id.uid = static_cast<uid_t>(v);
    id.gid = static_cast<gid_t>(v);
    return id;
  }
  // A namespace mapping only a few ids (a container): nobody, when it is mapped.
  if (mapped(uids, 65534) && mapped(gids, 65534)) {
    id.drop = true;
    id.uid = 65534;
    id.gid = 65534;
    return id;
  }
  throw target_error(
      "sandbox: no unprivileged uid to run nginx as (this user namespace maps too few ids)");
}

bool enter_loopback_network_namespace(std::string& why) {
  if (::geteuid() != 0) {
    why = "not root";
    return false;
  }
  std::error_code ec;
  std::size_t threads = 0;
  for (auto it = fs::directory_iterator("/proc/self/task", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec))
    ++threads;
  if (threads != 1) {
    why = "other threads are already running";
    return false;
  }
  if (::unshare(CLONE_NEWNET) != 0) {
    why = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
    return false;
  }
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    throw target_error(std::string("sandbox: socket in the new network namespace: ") +
                       std::strerror(errno));
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = ::ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
  ok = ok && ::ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok)
    throw target_error(std::string("sandbox: cannot bring up lo in the new network namespace: ") +
                       std::strerror(err));
  // `nginx -t` binds the listen sockets of the config it tests: in this namespace only (these
  // sysctls are per network namespace), let the sandbox's unprivileged uid bind ports below
  // 1024 and addresses the namespace does not have, as nginx as root on the real host would.
  for (const auto& [path, value] :
       {std::pair<const char*, const char*>{"/proc/sys/net/ipv4/ip_unprivileged_port_start", "0"},
        {"/proc/sys/net/ipv4/ip_nonlocal_bind", "1"},
        {"/proc/sys/net/ipv6/ip_nonlocal_bind", "1"}}) {
    const int f = ::open(path, O_WRONLY | O_CLOEXEC);
    if (f < 0) continue;
    if (::write(f, value, std::strlen(value)) < 0) {
    }
    ::close(f);
  }
  return true;
}

std::string run_dir_template(const std::string& base_dir) {
  proc_stat st;
  read_stat(::getpid(), st);
  return base_dir + "/run-" + std::to_string(::getpid()) + "-" + std::to_string(st.start) +
         "-XXXXXX";
}

void write_owner(const std::string& run_dir) {
  proc_stat st;
  read_stat(::getpid(), st);
  const std::string path = run_dir + "/owner";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw target_error("cannot write " + path + ": " + std::strerror(errno));
  write_all(fd, std::to_string(::getpid()) + " " + std::to_string(st.start) + "\n");
  ::close(fd);
}

int sweep_stale_runs(const std::string& base_dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(base_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("run-", 0) != 0 || !e.is_directory(ec) || e.is_symlink(ec)) continue;
    const std::string dir = e.path().string();
    // Only runs of this user, recorded in files only this user could write.
    struct stat dst {};
    if (::lstat(dir.c_str(), &dst) != 0 || dst.st_uid != ::getuid() || (dst.st_mode & 022))
      continue;
    long pid = 0;
    unsigned long long start = 0;
    bool alive = false;
    // run-PID-START-XXXXXX names its owner from the moment it exists; older runs have `owner`.
    char tail[8] = {};
    const bool named_owner =
        std::sscanf(name.c_str(), "run-%ld-%llu-%7s", &pid, &start, tail) == 3 &&
        std::strlen(tail) == 6;
    std::istringstream owner(named_owner ? std::string() : read_small(dir + "/owner"));
    if (named_owner || (owner >> pid >> start)) {
      proc_stat st;
      alive = pid > 0 && read_stat(static_cast<pid_t>(pid), st) && st.start == start;
    } else {
      // No owner yet: a run between mkdir and write_owner, or one killed right there.
      auto age = fs::file_time_type::clock::now() - fs::last_write_time(e.path(), ec);
      alive = ec || age < std::chrono::minutes(1);
    }
    if (alive) continue;
    std::set<pid_t> pgids;
    struct stat pst {};
    const std::string pgids_path = dir + "/pgids";
    if (::lstat(pgids_path.c_str(), &pst) == 0 && S_ISREG(pst.st_mode) &&
        pst.st_uid == ::getuid() && !(pst.st_mode & 022)) {
      std::istringstream pg(read_small(pgids_path));
      for (long g; pg >> g;)
        if (g > 1) pgids.insert(static_cast<pid_t>(g));
    }
    auto names_dir = [&](pid_t p) {
      std::string cmd = read_small("/proc/" + std::to_string(p) + "/cmdline");
      std::replace(cmd.begin(), cmd.end(), '\0', ' ');
      if (cmd.rfind("nginx", 0) == 0 && cmd.find(dir + "/") != std::string::npos) return true;
      // A master run as the sandbox identity works in the run directory (its paths are
      // /proc/self/cwd/...), and its workers inherit that.
      std::error_code cec;
      const std::string cwd = fs::read_symlink("/proc/" + std::to_string(p) + "/cwd", cec).string();
      return !cec && (cwd == dir || cwd.rfind(dir + "/", 0) == 0);
    };
    for (pid_t p : all_pids()) {
      proc_stat st;
      if (!read_stat(p, st) || st.comm.rfind("nginx", 0) != 0) continue;
      // A master names the run directory on its command line; a worker is ours when its
      // process group is a recorded one whose leader (the master) is ours or gone.
      bool ours = names_dir(p);
      if (!ours && pgids.count(st.pgrp)) {
        proc_stat leader;
        ours = !read_stat(st.pgrp, leader) || names_dir(st.pgrp);
      }
      if (ours) ::kill(p, SIGKILL);
    }
    fs::remove_all(e.path(), ec);
    if (!ec) ++removed;
  }
  return removed;
}

}  // namespace ngxtls::sandbox
