#pragma once
// Session files in the PEM `SSL SESSION PARAMETERS` format that `openssl s_client -sess_out`
// writes and `-sess_in` reads (PEM_write_bio_SSL_SESSION / PEM_read_bio_SSL_SESSION), so
// sessions move between ngxtls and s_client in both directions
// (https://www.openssl.org/docs/man3.0/man1/openssl-s_client.html).

#include <openssl/ssl.h>

#include <memory>
#include <string>

namespace ngxtls::probe {

/// Owns one SSL_SESSION reference.
struct session_deleter {
  void operator()(SSL_SESSION* s) const noexcept { SSL_SESSION_free(s); }
};
using session_ptr = std::unique_ptr<SSL_SESSION, session_deleter>;

/// Takes a new reference to `s` (SSL_SESSION_up_ref); null stays null.
session_ptr share_session(SSL_SESSION* s);

/// Writes `session` to `path` as PEM with mode 0600 (it holds the master secret): a new file
/// made with O_EXCL in the same directory, then renamed over `path`. A symlink, directory or
/// special file at `path` is refused, never followed. Throws ngxtls::input_error (file only,
/// line 0) when it cannot be written.
void write_session_pem(const std::string& path, SSL_SESSION* session);

/// The checks write_session_pem makes before writing, for failing before a long probe: throws
/// ngxtls::input_error when `path` is a symlink, directory or special file, or its directory
/// does not exist.
void check_session_output(const std::string& path);

/// Reads the first PEM session from `path` (a regular file of at most 1 MiB; FIFOs and devices
/// are refused without blocking). Throws ngxtls::input_error when the file cannot be read or
/// holds no session.
session_ptr read_session_pem(const std::string& path);

/// First 16 bytes of the session's ticket, lowercase hex ("" without a ticket or when shorter
/// than 16 bytes): the key name in OpenSSL's and nginx's stateless ticket layout
/// (test_probe_keys "key rotation").
std::string ticket_prefix_hex(const SSL_SESSION* session);

}  // namespace ngxtls::probe
