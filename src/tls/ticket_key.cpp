#include "tls/ticket_key.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "tls/file_read.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::tls {
namespace {

using md_ctx_ptr = ossl_ptr<EVP_MD_CTX, EVP_MD_CTX_free>;

// Closes a file descriptor on scope exit.
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

constexpr std::size_t key_name_bytes = 16;

}  // namespace

ticket_key_info inspect_ticket_key_file(const std::string& path) {
  // A FIFO or device named by ssl_session_ticket_key must not block: look before opening,
  // open without blocking, and look again at what was opened.
  if (std::string why = refused_file_reason(path); !why.empty())
    throw file_error(path, why, 0, true);
  fd_guard f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (f.fd < 0) {
    int e = errno;
    throw file_error(path, std::strerror(e), e);
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    int e = errno;
    throw file_error(path, std::strerror(e), e);
  }
  if (!S_ISREG(st.st_mode)) throw file_error(path, "not a regular file", 0, !S_ISDIR(st.st_mode));

  ticket_key_info info;
  info.size_bytes = static_cast<std::uint64_t>(st.st_size);
  info.mode = static_cast<unsigned>(st.st_mode) & 07777u;
  info.group_or_other_readable = (info.mode & 0044u) != 0;
  // nginx ngx_ssl_session_ticket_keys: "FILE" must be 48 or 80 bytes.
  info.valid_size = info.size_bytes == 48 || info.size_bytes == 80;

  md_ctx_ptr md(EVP_MD_CTX_new());
  if (!md || EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr) != 1) throw_openssl("SHA-256 init");
  std::array<unsigned char, 4096> buf{};
  unsigned char name[key_name_bytes];
  std::size_t name_len = 0;
  std::size_t total = 0;
  for (;;) {
    ssize_t n = ::read(f.fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      OPENSSL_cleanse(buf.data(), buf.size());
      throw file_error(path, std::strerror(e), e);
    }
    if (n == 0) break;
    auto got = static_cast<std::size_t>(n);
    total += got;
    if (total > max_tls_file_bytes) {  // grew past the limit while read
      OPENSSL_cleanse(buf.data(), buf.size());
      throw file_error(path,
                       "larger than the limit of " + std::to_string(max_tls_file_bytes) + " bytes",
                       0, true);
    }
    std::size_t take = std::min(got, key_name_bytes - name_len);
    std::memcpy(name + name_len, buf.data(), take);
    name_len += take;
    if (EVP_DigestUpdate(md.get(), buf.data(), got) != 1) throw_openssl("SHA-256 update");
  }
  OPENSSL_cleanse(buf.data(), buf.size());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  if (EVP_DigestFinal_ex(md.get(), digest, &digest_len) != 1) throw_openssl("SHA-256 final");
  info.key_name_hex = to_hex(name, name_len);
  info.fingerprint = to_hex(digest, digest_len).substr(0, 16);
  return info;
}

std::string write_ticket_key_file(const std::string& path, std::size_t size_bytes) {
  if (size_bytes != 48 && size_bytes != 80)
    throw std::invalid_argument("ticket key size must be 48 or 80 bytes, not " +
                                std::to_string(size_bytes));
  std::array<unsigned char, 80> key{};
  if (RAND_bytes(key.data(), static_cast<int>(size_bytes)) != 1) throw_openssl("RAND_bytes");
  std::string name_hex = to_hex(key.data(), key_name_bytes);

  // Write a 0600 temporary file next to the target, then rename it over the target, so a
  // reloading nginx never reads a half-written key and the key is never world-readable.
  std::string tmp = path + ".tmpXXXXXX";
  fd_guard f{::mkostemp(tmp.data(), O_CLOEXEC)};
  if (f.fd < 0) {
    int e = errno;
    OPENSSL_cleanse(key.data(), key.size());
    throw file_error(path, std::strerror(e), e);
  }
  auto fail = [&](int e) {
    OPENSSL_cleanse(key.data(), key.size());
    ::unlink(tmp.c_str());
    throw file_error(path, std::strerror(e), e);
  };
  if (::fchmod(f.fd, 0600) != 0) fail(errno);
  std::size_t done = 0;
  while (done < size_bytes) {
    ssize_t n = ::write(f.fd, key.data() + done, size_bytes - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    done += static_cast<std::size_t>(n);
  }
  OPENSSL_cleanse(key.data(), key.size());
  if (::fsync(f.fd) != 0) fail(errno);
  if (::close(f.fd) != 0) {
    f.fd = -1;
    fail(errno);
  }
  f.fd = -1;
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail(errno);
  return name_hex;
}

}  // namespace ngxtls::tls
