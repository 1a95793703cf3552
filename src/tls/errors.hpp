#pragma once
// Errors raised by the tls layer. Messages never contain key material.

#include <stdexcept>
#include <string>

namespace ngxtls::tls {

/// A file that the tls layer was asked to read or write could not be used: missing,
/// unreadable, or not holding what was expected (e.g. no PEM certificate in it).
/// what() is "PATH: reason". `reason` never quotes file content (it may hold secrets).
class file_error : public std::runtime_error {
 public:
  /// `path` as given by the caller; `reason` a short human text ("No such file or directory",
  /// "no certificate found"); `errno_value` the errno of the failing system call, 0 when
  /// the failure was about content rather than access.
  /// `not_a_file`: the path names no regular file, or one over the size limit
  /// (read_file_bounded): an input error wherever a configuration names it.
  file_error(std::string path, std::string reason, int errno_value = 0, bool not_a_file = false);
  /// The path as given by the caller.
  const std::string& path() const noexcept { return path_; }
  /// The reason alone, without the path.
  const std::string& reason() const noexcept { return reason_; }
  /// errno of the failing system call, 0 for content errors.
  int errno_value() const noexcept { return errno_; }
  /// True when the file does not exist (ENOENT). The CLI reports missing certificate or key
  /// files as a note ("not inspected here") unless --strict-files (CI often lints without the
  /// secrets).
  bool missing() const noexcept;
  /// True when the path is a FIFO, socket or device, or a file over the size limit: refused
  /// unread (tls/file_read.hpp), never a blocking read.
  bool not_a_file() const noexcept { return not_a_file_; }

 private:
  std::string path_;
  std::string reason_;
  int errno_ = 0;
  bool not_a_file_ = false;
};

/// An OpenSSL call failed for a reason other than file access (key generation, signing,
/// an unknown curve name). what() holds the operation and OpenSSL's error queue text.
class openssl_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ngxtls::tls
