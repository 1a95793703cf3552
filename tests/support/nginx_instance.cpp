#include "support/nginx_instance.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/nginx_run.hpp"

namespace ngxtls::test {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string nginx_conf(int workers, const std::string& http_body, const std::string& main_extra) {
  // Relative paths resolve against the -p prefix. Debian's nginx has absolute compiled-in temp
  // paths under /var/lib/nginx: point them into the prefix so an instance touches nothing else.
  return "worker_processes " + std::to_string(workers) +
         ";\n"
         "pid nginx.pid;\n"
         "error_log error.log notice;\n" +
         main_extra +
         "events { worker_connections 1024; }\n"
         "http {\n"
         "  access_log off;\n"
         "  client_body_temp_path tmp_body;\n"
         "  proxy_temp_path tmp_proxy;\n"
         "  fastcgi_temp_path tmp_fastcgi;\n"
         "  uwsgi_temp_path tmp_uwsgi;\n"
         "  scgi_temp_path tmp_scgi;\n" +
         http_body + "\n}\n";
}

std::vector<pid_t> child_pids(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream f(e.path() / "stat");
    std::string stat;
    if (!std::getline(f, stat)) continue;
    auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size()) continue;
    // after ") " come: state, ppid
    std::istringstream rest(stat.substr(close + 2));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && state != "Z") out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool port_accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = false;
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  if (rc == 0) {
    ok = true;
  } else if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, 200) == 1) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      ok = err == 0;
    }
  }
  ::close(fd);
  return ok;
}

namespace {

int workers_in(const std::string& conf) {
  std::smatch m;
  static const std::regex re(R"(worker_processes\s+(\d+|auto)\s*;)");
  if (!std::regex_search(conf, m, re)) return 1;
  if (m[1] == "auto") return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  return std::stoi(m[1]);
}

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

}  // namespace

nginx_instance::nginx_instance(const std::string& conf_text, nginx_options options)
    : own_dir_(std::make_unique<temp_dir>()),
      prefix_(own_dir_->path()),
      options_(std::move(options)) {
  ::chmod(prefix_.c_str(), 0755);  // workers run as nobody when the tests run as root
  // Where a prefix-relative default (logs/error.log, logs/nginx.pid) lands.
  fs::create_directory(prefix_ / "logs");
  write("nginx.conf", conf_text);
  workers_ = options_.workers > 0 ? options_.workers : workers_in(conf_text);
  auto t = test_config();
  if (t.exit_code != 0)
    throw std::runtime_error("nginx -t failed (" + std::to_string(t.exit_code) + "):\n" + t.err);

  std::string prefix_arg = prefix_.string() + "/";
  std::string conf = conf_path().string();
  std::string stderr_path = (prefix_ / "stderr.log").string();
  std::string startup_log = (prefix_ / "error.log").string();
  // The master and its workers run in a private mount namespace: nothing outside the prefix
  // changes (support/nginx_run.hpp).
  const nginx_isolation isolation({options_.binary, "-p", prefix_arg, "-c", conf});
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // The master dies with the test process: SIGTERM is nginx's fast shutdown, which stops
    // the workers as well (a SIGKILLed master would leave its workers serving).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) _exit(127);
    int fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::signal(SIGPIPE, SIG_DFL);
    if (!isolation.apply()) _exit(126);
    execl(options_.binary.c_str(), options_.binary.c_str(), "-p", prefix_arg.c_str(), "-c",
          conf.c_str(), "-e", startup_log.c_str(), "-g", "daemon off;",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  master_ = pid;
  try {
    wait_ready({}, workers_);
  } catch (...) {
    stop();
    throw;
  }
}

nginx_instance::~nginx_instance() {
  stop();
}

fs::path nginx_instance::write(const std::string& name, const std::string& content) const {
  fs::path p = prefix_ / name;
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << content;
  if (!f) throw std::runtime_error("cannot write " + p.string());
  return p;
}

command_result nginx_instance::test_config() const {
  return run_nginx({options_.binary, "-t", "-p", prefix_.string() + "/", "-c", conf_path().string(),
                    "-e", (prefix_ / "error.log").string()},
                   "", 30);
}

std::vector<pid_t> nginx_instance::worker_pids() const {
  if (master_ <= 0) return {};
  return child_pids(master_);
}

std::string nginx_instance::error_log() const {
  std::string out;
  for (const char* f : {"error.log", "stderr.log"}) {
    try {
      out += std::string("--- ") + f + "\n" + read_file(prefix_ / f);
    } catch (const std::exception&) {
    }
  }
  return out;
}

bool nginx_instance::running() {
  if (master_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(master_, &status, WNOHANG);
  if (r == master_) {
    master_ = -1;
    return false;
  }
  return true;
}

void nginx_instance::wait_ready(const std::vector<pid_t>& old_workers, int expected_workers) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.start_timeout_ms);
  for (;;) {
    if (!running())
      throw std::runtime_error("nginx exited during start or reload:\n" + error_log());
    auto kids = child_pids(master_);
    bool old_gone = std::none_of(old_workers.begin(), old_workers.end(), [&](pid_t p) {
      return std::find(kids.begin(), kids.end(), p) != kids.end();
    });
    int fresh = static_cast<int>(std::count_if(kids.begin(), kids.end(), [&](pid_t p) {
      return std::find(old_workers.begin(), old_workers.end(), p) == old_workers.end();
    }));
    bool ports_ok =
        std::all_of(options_.wait_ports.begin(), options_.wait_ports.end(), port_accepts);
    if (old_gone && fresh >= expected_workers && ports_ok) return;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("nginx did not become ready within " +
                               std::to_string(options_.start_timeout_ms) + " ms (workers " +
                               std::to_string(fresh) + "/" + std::to_string(expected_workers) +
                               ", old workers gone: " + (old_gone ? "yes" : "no") +
                               ", ports: " + (ports_ok ? "yes" : "no") + "):\n" + error_log());
    std::this_thread::sleep_for(10ms);
  }
}

void nginx_instance::reload(const std::string& new_conf_text) {
  if (!running()) throw std::runtime_error("nginx is not running:\n" + error_log());
  if (!new_conf_text.empty()) {
    write("nginx.conf", new_conf_text);
    if (options_.workers <= 0) workers_ = workers_in(new_conf_text);
  }
  auto t = test_config();
  if (t.exit_code != 0) throw std::runtime_error("nginx -t rejected the new config:\n" + t.err);
  auto old = child_pids(master_);
  // In the master's mount namespace: its pid file may be in its private /run.
  auto r = run_nginx({options_.binary, "-s", "reload", "-p", prefix_.string() + "/", "-c",
                      conf_path().string(), "-e", (prefix_ / "error.log").string()},
                     "", 30, master_);
  if (r.exit_code != 0) throw std::runtime_error("nginx -s reload failed:\n" + r.err);
  wait_ready(old, workers_);
}

void nginx_instance::stop() {
  if (master_ <= 0) return;
  auto workers = child_pids(master_);
  ::kill(master_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  int status = 0;
  bool reaped = false;
  while (std::chrono::steady_clock::now() < deadline) {
    pid_t r = ::waitpid(master_, &status, WNOHANG);
    if (r == master_ || r < 0) {
      reaped = true;
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  if (!reaped) {
    for (pid_t w : child_pids(master_)) ::kill(w, SIGKILL);
    ::kill(master_, SIGKILL);
    ::waitpid(master_, &status, 0);
  }
  // Workers are children of the master, not ours: make sure none is left.
  for (pid_t w : workers) {
    for (int i = 0; i < 200 && alive(w); ++i) std::this_thread::sleep_for(5ms);
    if (alive(w)) ::kill(w, SIGKILL);
  }
  master_ = -1;
}

}  // namespace ngxtls::test
