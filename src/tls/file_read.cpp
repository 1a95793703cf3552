#include "tls/file_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tls/errors.hpp"

namespace ngxtls::tls {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a file";
}

std::string reason_for(const struct stat& sb, std::size_t max_bytes) {
  if (S_ISDIR(sb.st_mode)) return {};
  if (!S_ISREG(sb.st_mode)) return std::string("not a regular file (") + kind_of(sb.st_mode) + ")";
  if (static_cast<std::size_t>(sb.st_size) > max_bytes)
    return "larger than the limit of " + std::to_string(max_bytes) + " bytes";
  return {};
}

struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string refused_file_reason(const std::string& path, std::size_t max_bytes) {
  int stat_errno = 0;
  return refused_file_reason(path, stat_errno, max_bytes);
}

std::string refused_file_reason(const std::string& path, int& stat_errno, std::size_t max_bytes) {
  struct stat sb {};
  stat_errno = 0;
  if (::stat(path.c_str(), &sb) != 0) {
    stat_errno = errno;
    return {};
  }
  return reason_for(sb, max_bytes);
}

std::string read_file_bounded(const std::string& path, std::size_t max_bytes) {
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) {
    const int e = errno;
    throw file_error(path, std::strerror(e), e);
  }
  // Opening a device can act on it (a tape rewinds): look before opening.
  if (std::string why = reason_for(sb, max_bytes); !why.empty())
    throw file_error(path, why, 0, true);
  fd_guard f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (f.fd < 0) {
    const int e = errno;
    throw file_error(path, std::strerror(e), e);
  }
  struct stat fb {};
  if (::fstat(f.fd, &fb) != 0) {
    const int e = errno;
    throw file_error(path, std::strerror(e), e);
  }
  if (S_ISDIR(fb.st_mode)) throw file_error(path, std::strerror(EISDIR), EISDIR);
  // The path may have been swapped for a FIFO since stat().
  if (std::string why = reason_for(fb, max_bytes); !why.empty())
    throw file_error(path, why, 0, true);
  std::string out(static_cast<std::size_t>(fb.st_size) + 1, '\0');
  std::size_t got = 0;
  while (true) {
    if (got == out.size()) {
      if (out.size() > max_bytes) break;  // grew past the limit while read
      out.resize(std::min(out.size() * 2 + 4096, max_bytes + 1));
    }
    const ssize_t n = ::read(f.fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      throw file_error(path, std::strerror(e), e);
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > max_bytes)
    throw file_error(path, "larger than the limit of " + std::to_string(max_bytes) + " bytes", 0,
                     true);
  out.resize(got);
  return out;
}

}  // namespace ngxtls::tls
