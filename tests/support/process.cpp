#include "support/process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace ngxtls::test {
namespace fs = std::filesystem;

temp_dir::temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ngxtls-test-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

temp_dir::~temp_dir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

fs::path temp_dir::write(const std::string& name, const std::string& content) const {
  fs::path p = path_ / name;
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << content;
  if (!f) throw std::runtime_error("cannot write " + p.string());
  return p;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    throw std::runtime_error("bind failed");
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

command_result run(const std::vector<std::string>& argv, const std::string& input, int timeout_s) {
  return run(argv, input, timeout_s, {});
}

command_result run(const std::vector<std::string>& argv, const std::string& input, int timeout_s,
                   const std::function<bool()>& before_exec) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC))
    throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (before_exec && !before_exec()) _exit(127);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  signal(SIGPIPE, SIG_IGN);
  command_result r;
  std::size_t written = 0;
  if (input.empty()) {
    close(in_pipe[1]);
    in_pipe[1] = -1;
  }
  fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool out_open = true, err_open = true, killed = false;
  while (out_open || err_open) {
    pollfd fds[3];
    int n = 0;
    int io = -1, oo = -1, eo = -1;
    if (in_pipe[1] >= 0) {
      io = n;
      fds[n++] = {in_pipe[1], POLLOUT, 0};
    }
    if (out_open) {
      oo = n;
      fds[n++] = {out_pipe[0], POLLIN, 0};
    }
    if (err_open) {
      eo = n;
      fds[n++] = {err_pipe[0], POLLIN, 0};
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    poll(fds, n, static_cast<int>(std::min<long long>(left, 1000)));
    char buf[65536];
    if (io >= 0 && (fds[io].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = write(in_pipe[1], input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<std::size_t>(w);
      if (w < 0 || written == input.size()) {
        close(in_pipe[1]);
        in_pipe[1] = -1;
      }
    }
    if (oo >= 0 && (fds[oo].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t k = read(out_pipe[0], buf, sizeof buf);
      if (k > 0)
        r.out.append(buf, static_cast<std::size_t>(k));
      else
        out_open = false;
    }
    if (eo >= 0 && (fds[eo].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t k = read(err_pipe[0], buf, sizeof buf);
      if (k > 0)
        r.err.append(buf, static_cast<std::size_t>(k));
      else
        err_open = false;
    }
  }
  if (in_pipe[1] >= 0) close(in_pipe[1]);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r.exit_code = 128 + WTERMSIG(status);
  if (killed) r.exit_code = 128 + SIGKILL;
  return r;
}

std::string ngxtls_binary() {
  // Another build's binary (e.g. to check that a regression test fails on the code before a fix).
  if (const char* s = std::getenv("NGXTLS_TEST_BINARY"); s && *s) return s;
  return NGXTLS_BINARY;
}
fs::path source_dir() {
  return NGXTLS_SOURCE_DIR;
}
fs::path cases_dir() {
  return source_dir() / "fixtures" / "cases";
}

namespace {
fs::path shared_root() {
  if (const char* s = std::getenv("NGXTLS_SHARED_DIR"); s && *s) return s;
  return fs::weakly_canonical(fs::path(NGXTLS_SHARED_DIR));
}
}  // namespace

std::optional<fs::path> corpus_dir() {
  std::vector<fs::path> candidates;
  if (const char* s = std::getenv("NGXTLS_CORPUS_DIR"); s && *s) candidates.emplace_back(s);
  candidates.push_back(shared_root() / "corpus");
  std::error_code ec;
  for (const auto& c : candidates)
    if (fs::is_regular_file(c / "MANIFEST.tsv", ec)) return c;
  return std::nullopt;
}

std::optional<fs::path> shared_file(const std::string& relative) {
  std::error_code ec;
  const fs::path p = shared_root() / relative;
  if (fs::is_regular_file(p, ec)) return p;
  return std::nullopt;
}

void skip_test(const std::string& why) {
  std::printf("NGXTLS_SKIP: %s\n", why.c_str());
  std::fflush(stdout);
}

std::string corpus_missing_reason() {
  return "the real-config corpus is not here (set NGXTLS_CORPUS_DIR, or fetch it with "
         "scripts/fetch-corpus.sh DIR and set NGXTLS_CORPUS_DIR=DIR)";
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace ngxtls::test
