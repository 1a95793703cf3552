#include "tls/openssl_ptr.hpp"

namespace ngxtls::tls {

std::string drain_openssl_errors() {
  std::string out;
  char buf[256];
  while (unsigned long e = ERR_get_error()) {
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

void throw_openssl(const std::string& what) {
  std::string errs = drain_openssl_errors();
  throw openssl_error(errs.empty() ? what : what + ": " + errs);
}

std::string to_hex(const unsigned char* data, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 0x0f];
  }
  return out;
}

}  // namespace ngxtls::tls
