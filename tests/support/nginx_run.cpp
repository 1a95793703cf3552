#include "support/nginx_run.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace ngxtls::test {
namespace fs = std::filesystem;

namespace {

// nginx's defaults (auto/options) for the state paths `nginx -V` leaves out, relative to the
// prefix.
struct state_option {
  const char* flag;
  const char* fallback;  // nullptr: none
  bool is_dir;
};
constexpr state_option state_options[] = {
    {"--http-client-body-temp-path=", "client_body_temp", true},
    {"--http-proxy-temp-path=", "proxy_temp", true},
    {"--http-fastcgi-temp-path=", "fastcgi_temp", true},
    {"--http-uwsgi-temp-path=", "uwsgi_temp", true},
    {"--http-scgi-temp-path=", "scgi_temp", true},
    {"--pid-path=", "logs/nginx.pid", false},
    {"--lock-path=", "logs/nginx.lock", false},
    {"--error-log-path=", "logs/error.log", false},
    {"--http-log-path=", "logs/access.log", false},
};

struct version_info {
  std::string prefix;                                  // --prefix, with a trailing slash
  std::vector<std::pair<std::string, bool>> relative;  // as compiled in (may be relative), is_dir
};

const version_info& info_of(const std::string& binary) {
  static std::mutex mu;
  static std::map<std::string, version_info> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(binary);
  if (it != cache.end()) return it->second;
  version_info info;
  info.prefix = "/usr/local/nginx/";
  std::map<std::string, std::string> given;
  const auto v = run({binary, "-V"}, "", 30);
  std::istringstream in(v.err + " " + v.out);
  for (std::string w; in >> w;) {
    if (w.rfind("--prefix=", 0) == 0) info.prefix = w.substr(9);
    for (const auto& o : state_options)
      if (w.rfind(o.flag, 0) == 0) given[o.flag] = w.substr(std::strlen(o.flag));
  }
  if (info.prefix.empty() || info.prefix.back() != '/') info.prefix += '/';
  for (const auto& o : state_options) {
    auto g = given.find(o.flag);
    std::string p = g != given.end() ? g->second : o.fallback;
    if (p == "stderr" || p.empty()) continue;  // --error-log-path=stderr opens no file
    info.relative.push_back({p, o.is_dir});
  }
  return cache.emplace(binary, std::move(info)).first->second;
}

std::string prefix_in(const std::vector<std::string>& argv) {
  for (std::size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == "-p" && i + 1 < argv.size()) return argv[i + 1];
    if (argv[i].rfind("-p", 0) == 0 && argv[i].size() > 2) return argv[i].substr(2);
  }
  return "";
}

bool inside(const fs::path& p, const fs::path& dir) {
  auto d = dir.begin();
  auto q = p.begin();
  for (; d != dir.end(); ++d, ++q) {
    if (d->empty()) continue;  // trailing slash
    if (q == p.end() || *q != *d) return false;
  }
  return true;
}

// Copies `s` into buf (of `size` bytes) at pos, NUL-terminated; returns the new position.
template <std::size_t size>
std::size_t put(char (&buf)[size], std::size_t pos, const char* s) {
  while (*s && pos + 1 < size) buf[pos++] = *s++;
  buf[pos] = '\0';
  return pos;
}

// The state paths of `binary` made absolute against `prefix` (else --prefix), with is_dir.
std::vector<std::pair<std::string, bool>> state_paths(const std::string& binary,
                                                      const std::string& prefix) {
  const auto& info = info_of(binary);
  std::string base = prefix.empty() ? info.prefix : prefix;
  if (base.back() != '/') base += '/';
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& [p, is_dir] : info.relative)
    out.push_back({p.front() == '/' ? p : base + p, is_dir});
  return out;
}

// Writes "cannot isolate nginx: WHAT failed, errno N" to stderr (system calls only, for the
// forked child) and returns false.
bool fail(const char* what) noexcept {
  const int err = errno;
  char msg[256];
  std::size_t pos = put(msg, 0, "ngxtls test: cannot isolate nginx from the host: ");
  pos = put(msg, pos, what);
  pos = put(msg, pos, " failed, errno ");
  char rev[16];
  int k = 0;
  for (int n = err; k == 0 || (n > 0 && k < 15); n /= 10)
    rev[k++] = static_cast<char>('0' + n % 10);
  while (k > 0 && pos + 2 < sizeof msg) msg[pos++] = rev[--k];
  msg[pos++] = '\n';  // pos + 1 < sizeof msg here
  if (::write(2, msg, pos) < 0) {
  }
  errno = err;
  return false;
}

}  // namespace

std::vector<std::string> nginx_state_paths(const std::string& binary, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& [p, is_dir] : state_paths(binary, prefix)) out.push_back(p);
  return out;
}

nginx_isolation::nginx_isolation(const std::vector<std::string>& argv, pid_t share_namespace_of) {
  if (::geteuid() != 0 || argv.empty()) return;  // without root nginx cannot chown; run as is
  active_ = true;
  if (share_namespace_of > 0) {
    join_ns_path_ = "/proc/" + std::to_string(share_namespace_of) + "/ns/mnt";
    return;
  }
  const std::string prefix = prefix_in(argv);
  std::error_code ec;
  const fs::path own = prefix.empty() ? fs::path() : fs::weakly_canonical(prefix, ec);

  // Directories made wholly fresh, and directories shadowed (names left out).
  std::set<std::string> fresh;
  std::map<std::string, std::set<std::string>> shadow;
  auto add_state = [&](const std::string& raw, bool is_dir) {
    fs::path p = fs::weakly_canonical(raw, ec);  // /var/lock/x -> /run/lock/x
    if (ec || p.empty()) return;
    if (!own.empty() && inside(p, own)) return;  // the test's own directory
    if (is_dir && fs::is_directory(p, ec)) {
      fresh.insert(p.string());
      return;
    }
    fs::path child = p;
    fs::path parent = p.parent_path();
    while (!parent.empty() && parent != parent.parent_path() && !fs::is_directory(parent, ec)) {
      child = parent;
      parent = parent.parent_path();
    }
    if (parent.empty() || parent == parent.parent_path()) return;  // never a tmpfs over "/"
    shadow[parent.string()].insert(child.filename().string());
  };
  for (const auto& [p, is_dir] : state_paths(argv[0], prefix)) add_state(p, is_dir);
  for (const char* d : {"/var/lib/nginx", "/var/log/nginx"}) add_state(d, true);
  for (const auto& e : fs::directory_iterator("/run", ec))
    if (e.path().filename().string().rfind("nginx", 0) == 0) add_state(e.path().string(), false);

  // Mount order: parents first; skip what lies in a fresh directory or under a left-out name
  // (it is not there in the namespace).
  std::vector<std::pair<std::string, bool>> order;  // path, is_fresh
  for (const auto& f : fresh) order.push_back({f, true});
  for (const auto& [d, names] : shadow)
    if (!fresh.count(d)) order.push_back({d, false});  // a fresh directory hides those names too
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    auto depth = [](const std::string& s) { return std::count(s.begin(), s.end(), '/'); };
    return depth(a.first) != depth(b.first) ? depth(a.first) < depth(b.first) : a < b;
  });
  std::vector<std::string> gone;  // fresh dirs and left-out paths
  for (const auto& [dir, is_fresh] : order) {
    // A named reference for the lambda: clang 14 cannot capture a structured binding.
    const std::string& path = dir;
    if (std::any_of(gone.begin(), gone.end(),
                    [&](const std::string& g) { return inside(path, g); }))
      continue;
    cover c;
    c.dir = dir;
    if (is_fresh) {
      gone.push_back(dir);
    } else {
      const auto& names = shadow[dir];
      c.fresh.assign(names.begin(), names.end());
      for (const auto& n : names) gone.push_back(dir + "/" + n);
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        entry en;
        en.name = name;
        en.target = dir + "/" + name;
        std::error_code ec2;
        if (names.count(name)) {
          // nginx's own directory (a /run/nginx/ for the pid file): there, but empty.
          if (e.is_directory(ec2) && !e.is_symlink(ec2)) {
            en.is_dir = en.empty = true;
            c.bind_back.push_back(std::move(en));
          }
          continue;
        }
        en.is_link = e.is_symlink(ec2);
        if (en.is_link)
          en.link_target = fs::read_symlink(e.path(), ec2).string();
        else
          en.is_dir = e.is_directory(ec2);
        c.bind_back.push_back(std::move(en));
      }
    }
    covers_.push_back(std::move(c));
  }
}

bool nginx_isolation::apply() const noexcept {
  if (!active_) return true;
  if (!join_ns_path_.empty()) {
    int fd = ::open(join_ns_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail("open of the master's mount namespace");
    int rc = ::setns(fd, CLONE_NEWNS);
    ::close(fd);
    return rc == 0 || fail("setns");
  }
  if (::unshare(CLONE_NEWNS) != 0) return fail("unshare(CLONE_NEWNS)");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fail("private mount propagation");
  for (const auto& c : covers_) {
    // The original directory, reachable through this fd after the tmpfs covers its path.
    int fd = ::open(c.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return fail(c.dir.c_str());
    if (::mount("tmpfs", c.dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64m") != 0) {
      ::close(fd);
      return fail(c.dir.c_str());
    }
    char digits[16];
    int n = fd, k = 0;
    char rev[16];
    do {
      rev[k++] = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n > 0 && k < 15);
    for (int i = 0; i < k; ++i) digits[i] = rev[k - 1 - i];
    digits[k] = '\0';
    for (const auto& e : c.bind_back) {
      if (e.is_link) {
        if (::symlink(e.link_target.c_str(), e.target.c_str()) != 0) return fail(e.target.c_str());
        continue;
      }
      char src[PATH_MAX];
      std::size_t pos = put(src, 0, "/proc/self/fd/");
      pos = put(src, pos, digits);
      pos = put(src, pos, "/");
      put(src, pos, e.name.c_str());
      if (e.is_dir) {
        if (::mkdir(e.target.c_str(), 0755) != 0) return fail(e.target.c_str());
        if (e.empty) continue;
      } else {
        int f = ::open(e.target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (f < 0) return fail(e.target.c_str());
        ::close(f);
      }
      if (::mount(src, e.target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
        return fail(e.target.c_str());
    }
    ::close(fd);
  }
  return true;
}

std::vector<std::string> nginx_isolation::describe() const {
  std::vector<std::string> out;
  for (const auto& c : covers_) {
    std::string s = (c.fresh.empty() ? "fresh " : "shadow ") + c.dir;
    for (const auto& n : c.fresh) s += " -" + n;
    out.push_back(s);
  }
  return out;
}

command_result run_nginx(const std::vector<std::string>& argv, const std::string& input,
                         int timeout_s, pid_t share_namespace_of) {
  const nginx_isolation iso(argv, share_namespace_of);
  return run(argv, input, timeout_s, [&iso] { return iso.apply(); });
}

}  // namespace ngxtls::test
