#include "tls/errors.hpp"

#include <cerrno>

namespace ngxtls::tls {

file_error::file_error(std::string path, std::string reason, int errno_value, bool not_a_file)
    : std::runtime_error(path + ": " + reason),
      path_(std::move(path)),
      reason_(std::move(reason)),
      errno_(errno_value),
      not_a_file_(not_a_file) {}

bool file_error::missing() const noexcept {
  return errno_ == ENOENT;
}

}  // namespace ngxtls::tls
