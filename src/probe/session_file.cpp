#include "probe/session_file.hpp"

#include <fcntl.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/error.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::probe {

session_ptr share_session(SSL_SESSION* s) {
  if (s == nullptr) return nullptr;
  SSL_SESSION_up_ref(s);
  return session_ptr(s);
}

namespace {
// A saved session is a few KiB of PEM; anything far larger is not one.
constexpr std::size_t max_session_file_bytes = 1 << 20;

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
}  // namespace

void check_session_output(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      throw input_error({path, 0, 0},
                        "cannot write session file: it is a symbolic link (not followed)");
    if (S_ISDIR(st.st_mode))
      throw input_error({path, 0, 0}, "cannot write session file: it is a directory");
    if (!S_ISREG(st.st_mode))
      throw input_error({path, 0, 0}, "cannot write session file: not a regular file");
  }
  struct stat dir {};
  const std::string d = directory_of(path);
  if (::stat(d.c_str(), &dir) != 0)
    throw input_error({path, 0, 0},
                      std::string("cannot write session file: ") + std::strerror(errno));
  if (!S_ISDIR(dir.st_mode))
    throw input_error({path, 0, 0},
                      "cannot write session file: " + std::string(std::strerror(ENOTDIR)));
}

void write_session_pem(const std::string& path, SSL_SESSION* session) {
  tls::bio_ptr mem(BIO_new(BIO_s_mem()));
  if (!mem || PEM_write_bio_SSL_SESSION(mem.get(), session) != 1) {
    ERR_clear_error();
    throw input_error({path, 0, 0}, "cannot encode the TLS session");
  }
  char* data = nullptr;
  long len = BIO_get_mem_data(mem.get(), &data);
  // The file holds a master secret: write a new file (mode 0600, O_EXCL: never through a
  // symlink or into someone else's file) next to the target, then rename it over the target.
  // A symlink or special file at `path` is refused (replacing /dev/stdout, or a link someone
  // planted, is never what was meant); should one appear after this check, rename() replaces
  // the link itself and still writes nothing where it points.
  check_session_output(path);
  std::string tmp = directory_of(path) + "/.ngxtls-session-XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0)
    throw input_error({path, 0, 0},
                      std::string("cannot write session file: ") + std::strerror(errno));
  bool ok = ::fchmod(fd, 0600) == 0;  // mkostemp makes 0600 already; say it
  long off = 0;
  while (ok && off < len) {
    ssize_t w = ::write(fd, data + off, static_cast<std::size_t>(len - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      ok = false;
    else
      off += w;
  }
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    throw input_error({path, 0, 0},
                      std::string("cannot write session file: ") + std::strerror(err));
  }
}

session_ptr read_session_pem(const std::string& path) {
  // O_NONBLOCK and a regular-file check: a FIFO or device named by mistake must not hang us.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw input_error({path, 0, 0},
                      std::string("cannot read session file: ") + std::strerror(errno));
  std::string text;
  struct stat st {};
  bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  bool too_big = regular && static_cast<std::size_t>(st.st_size) > max_session_file_bytes;
  int err = 0;
  if (regular && !too_big) {
    char buf[16384];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        err = errno;
        break;
      }
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      if (text.size() > max_session_file_bytes) {
        too_big = true;
        break;
      }
    }
  }
  ::close(fd);
  if (!regular) throw input_error({path, 0, 0}, "cannot read session file: not a regular file");
  if (too_big)
    throw input_error({path, 0, 0}, "cannot read session file: larger than " +
                                        std::to_string(max_session_file_bytes) + " bytes");
  if (err != 0)
    throw input_error({path, 0, 0}, std::string("cannot read session file: ") + std::strerror(err));
  tls::bio_ptr in(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  SSL_SESSION* s = in ? PEM_read_bio_SSL_SESSION(in.get(), nullptr, nullptr, nullptr) : nullptr;
  ERR_clear_error();
  if (s == nullptr) throw input_error({path, 0, 0}, "no SSL SESSION PARAMETERS block in the file");
  return session_ptr(s);
}

std::string ticket_prefix_hex(const SSL_SESSION* session) {
  const unsigned char* tick = nullptr;
  std::size_t len = 0;
  if (session == nullptr) return {};
  SSL_SESSION_get0_ticket(session, &tick, &len);
  if (tick == nullptr || len < 16) return {};
  return tls::to_hex(tick, 16);
}

}  // namespace ngxtls::probe
