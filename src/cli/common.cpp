#include "cli/common.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "base/error.hpp"
#include "report/terminal_text.hpp"
#include "sandbox/sandbox_process.hpp"

namespace ngxtls::cli {

namespace {
// The Debian package version of the nginx `binary` runs, when dpkg owns the file: distributions
// backport fixes (CVE-2025-23419 into Debian 12's 1.22.1-9+deb12u1) under the old upstream
// version. Two dpkg-query runs of at most 5 s each, local only; empty on any failure.
std::string package_version_of(const std::string& binary) {
  try {
    const std::string path = sandbox::find_executable(binary);
    if (path.empty() || sandbox::find_executable("dpkg-query").empty()) return {};
    std::vector<std::string> candidates{path};
    std::error_code ec;
    const auto canonical = std::filesystem::canonical(path, ec);
    if (!ec && canonical.string() != path) candidates.push_back(canonical.string());
    for (const auto& p : candidates) {
      auto owner = sandbox::run_command({"dpkg-query", "-S", p}, 5000);
      if (owner.exit_code != 0) continue;
      const std::string pkg = model::package_owning(owner.out, p);
      if (pkg.empty()) continue;
      auto ver = sandbox::run_command({"dpkg-query", "-W", "-f=${Version}", pkg}, 5000);
      if (ver.exit_code != 0 || ver.out.empty() || ver.out.size() > 100) return {};
      for (char c : ver.out)
        if (!std::isalnum(static_cast<unsigned char>(c)) &&
            std::string_view(".+-~:").find(c) == std::string_view::npos)
          return {};
      return ver.out;
    }
  } catch (const std::exception&) {
  }
  return {};
}

std::string run_nginx_v(const std::string& binary) {
  // nginx prints -V to stderr.
  try {
    auto r = sandbox::run_command({binary, "-V"}, 10000);
    return r.exit_code == 0 ? r.err + r.out : std::string();
  } catch (const std::exception&) {
    return {};
  }
}
}  // namespace

engine::nginx_inspector nginx_inspector(const std::string& binary) {
  engine::nginx_inspector n;
  n.binary = binary;
  n.version_output = run_nginx_v;
  n.package_version = package_version_of;
  return n;
}

void add_rule_selection(CLI::App* sub, std::vector<std::string>& select,
                        std::vector<std::string>& ignore) {
  sub->add_option("--select", select, "only these rule ids")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--ignore", ignore, "skip these rule ids")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void add_context_option(CLI::App* sub, std::optional<config::implied_context>& site_context) {
  sub->add_option_function<std::string>(
         "--context",
         [&site_context](const std::string& v) {
           site_context = v == "stream" ? config::implied_context::stream
                          : v == "mail" ? config::implied_context::mail
                                        : config::implied_context::http;
         },
         "read site files inside this block (default: their include site, else their shape)")
      ->check(CLI::IsMember({"http", "stream", "mail"}));
}

void add_version_options(CLI::App* sub, std::string& nginx, std::string& openssl,
                         const std::string& nginx_help, const std::string& openssl_help) {
  auto readable = [](const std::string& what) {
    return [what](const std::string& text) {
      return model::version::parse_given(text) ? std::string()
                                               : model::unreadable_version(what, text);
    };
  };
  sub->add_option("--nginx-version", nginx, nginx_help)->take_last()->check(readable("nginx"));
  sub->add_option("--openssl-version", openssl, openssl_help)
      ->take_last()
      ->check(readable("OpenSSL"));
}

void say_on_stderr(std::string_view text) {
  std::cerr << "ngxtls: " << report::terminal_safe(std::string(text)) << "\n";
}

engine::lint_hooks lint_hooks(const std::string& binary) {
  engine::lint_hooks h;
  h.say = say_on_stderr;
  h.nginx = nginx_inspector(binary);
  return h;
}

namespace {

// An output buffer over a file descriptor that remembers why a write failed: std::ostream keeps
// only badbit, and errno is long overwritten by the time the caller looks.
class fd_buffer : public std::streambuf {
 public:
  explicit fd_buffer(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
  fd_buffer(const fd_buffer&) = delete;
  fd_buffer& operator=(const fd_buffer&) = delete;
  ~fd_buffer() override { drain(); }
  /// The errno of the first failed write, 0 when none failed.
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n >= static_cast<std::streamsize>(sizeof buf_)) {
      if (!drain() || !write_all(s, static_cast<std::size_t>(n))) return 0;
      return n;
    }
    return std::streambuf::xsputn(s, n);
  }

 private:
  bool write_all(const char* p, std::size_t n) {
    if (error_) return false;
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = w < 0 ? errno : EIO;
        return false;
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }
  bool drain() {
    const std::size_t n = static_cast<std::size_t>(pptr() - pbase());
    setp(buf_, buf_ + sizeof buf_);
    return write_all(buf_, n);
  }

  int fd_;
  int error_ = 0;
  char buf_[1 << 16];
};

fd_buffer* stdout_buffer = nullptr;

std::string errno_text(int e) {
  return std::strerror(e);
}

// The directory part of `path` for a sibling temporary file ("." for a bare name).
std::string directory_of_path(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Writes through a temporary file created with O_EXCL next to `target`, then renames it over
// `target`. `mode`/`owner` of the result: `like`'s when given, else 0666 less the umask.
void write_replacing(const std::string& target, const std::string& shown,
                     const std::function<void(std::ostream&)>& write, const struct stat* like) {
  const std::string dir = directory_of_path(target);
  const std::string base = target.substr(
      target.find_last_of('/') == std::string::npos ? 0 : target.find_last_of('/') + 1);
  if (base.empty() || base == "." || base == "..")
    throw usage_error("cannot write " + shown + ": " + errno_text(EISDIR));
  std::string tmp = dir + "/." + base + ".ngxtls-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    // mkstemp says why the directory cannot take a file; name the path the user gave.
    throw usage_error("cannot write " + shown + ": " + errno_text(errno));
  }
  bool ok = false;
  struct remove_tmp {
    const std::string& tmp;
    bool& ok;
    ~remove_tmp() {
      if (!ok) ::unlink(tmp.c_str());
    }
  } cleanup{tmp, ok};
  int err = 0;
  {
    fd_buffer buf(fd);
    std::ostream os(&buf);
    write(os);
    os.flush();
    err = buf.error();
  }
  if (!err && like) {
    if (::fchmod(fd, like->st_mode & 07777) != 0) err = errno;
    if (!err && (like->st_uid != ::geteuid() || like->st_gid != ::getegid()) &&
        ::fchown(fd, like->st_uid, like->st_gid) != 0)
      err = errno;
  } else if (!err) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::fchmod(fd, 0666 & ~mask) != 0) err = errno;
  }
  if (!err && ::fsync(fd) != 0 && errno != EINVAL) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), target.c_str()) != 0) err = errno;
  if (err) throw usage_error("cannot write " + shown + ": " + errno_text(err));
  ok = true;
}

}  // namespace

void install_stdout_buffer() {
  // Never destroyed: std::cout is flushed after static objects are gone.
  static fd_buffer* buf = new fd_buffer(STDOUT_FILENO);
  stdout_buffer = buf;
  std::cout.rdbuf(buf);
}

void finish_stdout() {
  std::cout.flush();
  const int err = stdout_buffer ? stdout_buffer->error() : (std::cout ? 0 : EIO);
  if (err || !std::cout)
    throw usage_error("cannot write to stdout: " + errno_text(err ? err : EIO));
}

void write_output(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path.empty() || path == "-") {
    write(std::cout);
    finish_stdout();
    return;
  }
  // A directory, or a FIFO or device given as -o, is written as it is (`-o /dev/stdout`);
  // only a regular file, a symlink or a new name is replaced by rename.
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) st.st_mode = 0;
  if (st.st_mode != 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw usage_error("cannot write " + path + ": " + errno_text(EISDIR));
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw usage_error("cannot write " + path + ": " + errno_text(errno));
    int err = 0;
    {
      fd_buffer buf(fd);
      std::ostream os(&buf);
      write(os);
      os.flush();
      err = buf.error();
    }
    if (::close(fd) != 0 && !err) err = errno;
    if (err) throw usage_error("cannot write " + path + ": " + errno_text(err));
    return;
  }
  // An existing report file keeps its mode (not its owner: the writer owns the new file).
  struct stat like = st;
  like.st_uid = ::geteuid();
  like.st_gid = ::getegid();
  write_replacing(path, path, write, S_ISREG(st.st_mode) ? &like : nullptr);
}

void refuse_output_over_config(const std::string& output,
                               const std::vector<const config::config*>& configs) {
  if (output.empty() || output == "-") return;
  // -o replaces a symlink rather than its target, so the link itself is what would be lost.
  struct stat out {};
  if (::lstat(output.c_str(), &out) != 0 || !S_ISREG(out.st_mode)) return;
  for (const config::config* c : configs) {
    if (c == nullptr) continue;
    for (const auto& f : c->files) {
      // A file read from disk is known by what its read saw; the rest (a dump's, stdin's
      // main file) are looked up.
      struct stat in {};
      const bool same = f.inode != 0 ? f.device == static_cast<std::uint64_t>(out.st_dev) &&
                                           f.inode == static_cast<std::uint64_t>(out.st_ino)
                                     : ::stat(f.path.c_str(), &in) == 0 &&
                                           in.st_dev == out.st_dev && in.st_ino == out.st_ino;
      if (same)
        throw usage_error("-o " + output + " is the configuration file " + f.path +
                          " being read: refusing to replace it with the report");
    }
  }
}

void write_output(const std::string& path, const std::string& text) {
  write_output(path, [&](std::ostream& os) { os << text; });
}

void replace_config_file(const std::string& path, const std::string& text) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) throw usage_error("cannot write " + path + ": " + errno_text(errno));
  const std::string target(real);
  std::free(real);
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0)
    throw usage_error("cannot write " + path + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) throw usage_error("cannot write " + path + ": not a regular file");
  write_replacing(
      target, path, [&](std::ostream& os) { os << text; }, &st);
}

bool is_tty(int fd) {
  return isatty(fd) == 1;
}

status_line::status_line() : on_(is_tty(2)) {}

status_line::~status_line() {
  clear();
}

void status_line::show(const std::string& text, int min_interval_ms) {
  if (!on_) return;
  const long long now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
  if (drawn_ && last_ms_ >= 0 && now - last_ms_ < min_interval_ms) return;
  last_ms_ = now;
  std::cerr << "\r\x1b[Kngxtls: " << report::terminal_safe(text) << std::flush;
  drawn_ = true;
}

void status_line::clear() {
  if (!drawn_) return;
  std::cerr << "\r\x1b[K" << std::flush;
  drawn_ = false;
}

void add_color_option(CLI::App* sub, std::string& mode) {
  sub->add_option("--color", mode,
                  "color text output: auto (on a terminal, unless NO_COLOR is set), always or "
                  "never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
}

bool use_color(const std::string& mode, int fd, bool to_file) {
  if (mode == "always") return true;
  if (mode == "never" || to_file) return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  return is_tty(fd);
}

std::string project_root(const std::string& given) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!given.empty()) {
    if (!fs::is_directory(given, ec))
      throw usage_error("--project-root " + given + ": not a directory");
    return fs::absolute(given, ec).lexically_normal().string();
  }
  const fs::path cwd = fs::current_path(ec);
  if (ec) return {};
  for (fs::path p = cwd;; p = p.parent_path()) {
    if (fs::exists(p / ".git", ec)) return p.string();
    if (p == p.root_path() || p.parent_path() == p) break;
  }
  return cwd.string();
}

void refuse_report_as_config_baseline(const std::string& path) {
  std::error_code ec;
  if (path.empty() || path == "-" || !std::filesystem::is_regular_file(path, ec)) return;
  // Only the first bytes: a report starts with its JSON object; nginx configs never start
  // with '{'.
  std::ifstream in(path, std::ios::binary);
  char head[512] = {};
  in.read(head, sizeof head);
  const std::string_view text(head, static_cast<std::size_t>(in.gcount()));
  const auto start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || text[start] != '{') return;
  const bool sarif = text.find("\"runs\"") != std::string_view::npos ||
                     text.find("sarif") != std::string_view::npos;
  throw usage_error("--baseline " + path + ": this is a " + std::string(sarif ? "SARIF" : "JSON") +
                    " report, not an nginx config. --baseline takes the config deployed before "
                    "this one (ticket key rotation); to report only findings that are not in a "
                    "previous report, use --baseline-report " +
                    path);
}

}  // namespace ngxtls::cli
