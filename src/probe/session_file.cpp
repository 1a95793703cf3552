#include "probe/session_file.hpp"

#include <fcntl.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::probe {

session_ptr share_session(SSL_SESSION* s) {
  if (s == nullptr) return nullptr;
  SSL_SESSION_up_ref(s);
  return session_ptr(s);
}

void write_session_pem(const std::string& path, SSL_SESSION* session) {
  tls::bio_ptr mem(BIO_new(BIO_s_mem()));
  if (!mem || PEM_write_bio_SSL_SESSION(mem.get(), session) != 1) {
    ERR_clear_error();
    throw input_error({path, 0, 0}, "cannot encode the TLS session");
  }
  char* data = nullptr;
  long len = BIO_get_mem_data(mem.get(), &data);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw input_error({path, 0, 0}, std::string("cannot write session file: ") + std::strerror(errno));
  // An existing file keeps its old mode through O_CREAT: force 0600 (it holds a master secret).
  bool ok = ::fchmod(fd, 0600) == 0;
  long off = 0;
  while (ok && off < len) {
    ssize_t w = ::write(fd, data + off, static_cast<std::size_t>(len - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ok = false; else off += w;
  }
  int err = errno;
  ::close(fd);
  if (!ok) throw input_error({path, 0, 0}, std::string("cannot write session file: ") + std::strerror(err));
}

session_ptr read_session_pem(const std::string& path) {
  tls::bio_ptr in(BIO_new_file(path.c_str(), "r"));
  if (!in) {
    ERR_clear_error();
    throw input_error({path, 0, 0}, std::string("cannot read session file: ") + std::strerror(errno));
  }
  SSL_SESSION* s = PEM_read_bio_SSL_SESSION(in.get(), nullptr, nullptr, nullptr);
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
