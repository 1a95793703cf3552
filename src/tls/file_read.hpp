#pragma once
// Reading a file that a configuration names (certificates, keys, ticket keys, DH parameters,
// OCSP responses): never a blocking open or read, never more than a bounded size.

#include <cstddef>
#include <string>

namespace ngxtls::tls {

/// The most bytes read from one file a configuration names (a certificate bundle, a CRL):
/// the largest real ones are a few MiB (Debian's whole CA bundle is 0.2 MiB).
inline constexpr std::size_t max_tls_file_bytes = std::size_t{64} << 20;

/// The bytes of the regular file at `path`, at most `max_bytes` of them. A FIFO, socket or
/// device is refused without a blocking open or read (stat(), then open(O_NONBLOCK) and
/// fstat() against a swap in between): file_error with not_a_file() true, as for a file over
/// `max_bytes`. Missing or unreadable files: file_error with the errno (missing() for ENOENT).
/// A directory: file_error "Is a directory" (EISDIR), as reading one reports.
std::string read_file_bounded(const std::string& path, std::size_t max_bytes = max_tls_file_bytes);

/// Why the file at `path` cannot be read by read_file_bounded() without reading it: "not a
/// regular file (a FIFO)", "larger than the limit of N bytes", or "" when it is a regular file
/// within `max_bytes`, a directory, or cannot be stat()ed (the read reports those).
std::string refused_file_reason(const std::string& path,
                                std::size_t max_bytes = max_tls_file_bytes);
/// refused_file_reason(), also setting `stat_errno` to the errno of a failed stat() (0 when
/// it succeeded): a caller that learns a file is missing needs not stat it again.
std::string refused_file_reason(const std::string& path, int& stat_errno,
                                std::size_t max_bytes = max_tls_file_bytes);

}  // namespace ngxtls::tls
