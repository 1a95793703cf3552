#pragma once
// ssl_session_ticket_key files: size, permissions, and the 16-byte key name that starts every
// stateless ticket sealed with the key (docs/nginx-facts.md#ticket-key-rotation).

#include <cstddef>
#include <cstdint>
#include <string>

#include "tls/errors.hpp"

namespace ngxtls::tls {

/// Facts about one ticket key file. Never holds key material beyond the key name, which is
/// public anyway: it travels in clear at the start of every ticket.
struct ticket_key_info {
  std::uint64_t size_bytes = 0;          ///< file size
  unsigned mode = 0;                     ///< permission bits (st_mode & 07777)
  bool group_or_other_readable = false;  ///< mode & 044: anyone but the owner can read the key
  std::string
      key_name_hex;  ///< first 16 bytes, lowercase hex (nginx/OpenSSL ticket layout:
                     ///< the key name starts every stateless ticket); shorter files: all bytes
  std::string fingerprint;  ///< SHA-256 of the whole content, lowercase hex, first 16 hex chars:
                            ///< compares files across hosts without revealing them
  bool valid_size = false;  ///< 48 or 80 bytes (nginx: `"FILE" must be 48 or 80 bytes`)
};

/// Reads `path` (stat + content). Throws file_error when it is missing or unreadable.
ticket_key_info inspect_ticket_key_file(const std::string& path);

/// Writes `size_bytes` (48 or 80) random bytes from RAND_bytes to `path`, created with mode
/// 0600 (an existing file is replaced and re-moded 0600). Returns the 16-byte key name in
/// lowercase hex. Throws std::invalid_argument for other sizes, file_error when the file
/// cannot be written, openssl_error when RAND_bytes fails.
std::string write_ticket_key_file(const std::string& path, std::size_t size_bytes = 80);

}  // namespace ngxtls::tls
