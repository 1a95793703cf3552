#pragma once
// Cipher strings as the installed libssl expands them (never a table of our own).

#include <string>
#include <vector>

namespace ngxtls::tls {

/// One cipher suite, in `openssl ciphers -v` terms.
struct cipher_info {
  std::string name;       ///< OpenSSL name, e.g. "ECDHE-ECDSA-AES256-GCM-SHA384"
  std::string iana_name;  ///< RFC/IANA name, e.g. "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
  std::string protocol;   ///< lowest protocol it needs, SSL_CIPHER_get_version: "TLSv1.2", "SSLv3",
                          ///< "TLSv1.3"
  std::string
      kx;  ///< key exchange as SSL_CIPHER_description prints it: "ECDH", "DH", "RSA", "PSK", "any"
  std::string auth;  ///< authentication: "RSA", "ECDSA", "None" (aNULL), "PSK", "any"
  std::string enc;   ///< encryption with key bits: "AESGCM(256)", "CHACHA20/POLY1305(256)", "None"
  std::string mac;   ///< "AEAD", "SHA384", "SHA1", "MD5", "None"
  int bits = 0;  ///< symmetric key bits actually used (SSL_CIPHER_get_bits); 0 for NULL encryption
  bool aead = false;  ///< SSL_CIPHER_is_aead
  unsigned id = 0;    ///< two-byte IANA code point (SSL_CIPHER_get_protocol_id), e.g. 0xC02C
  /// OpenSSL negotiates it at the string's security level (default 1, or `@SECLEVEL=N`): it is
  /// among SSL_get1_supported_ciphers, as `openssl ciphers -s` lists them (level 1 drops
  /// NULL-encryption, anonymous and export suites; PSK and SRP suites need callbacks nginx
  /// never sets).
  bool negotiable = true;
};

/// Expands an OpenSSL cipher string (nginx `ssl_ciphers`) with the installed libssl:
/// SSL_CTX_set_cipher_list on a fresh SSL_CTX, then SSL_CTX_get_ciphers, in preference order.
/// Only TLS 1.2-and-below ciphers are returned: TLS 1.3 suites are set separately
/// (nginx `ssl_conf_command Ciphersuites`; see expand_tls13_ciphersuites).
/// Throws std::invalid_argument when OpenSSL matches no cipher (SSL_R_NO_CIPHER_MATCH).
std::vector<cipher_info> expand_cipher_string(const std::string& spec);

/// Expands a TLS 1.3 ciphersuite list ("TLS_AES_128_GCM_SHA256:...", SSL_CTX_set_ciphersuites).
/// An empty `spec` gives OpenSSL's default TLS 1.3 suites. Throws std::invalid_argument when
/// OpenSSL rejects the list.
std::vector<cipher_info> expand_tls13_ciphersuites(const std::string& spec = "");

/// The version of the libssl in use, short form: "3.0.19" (from OpenSSL_version(OPENSSL_VERSION)
/// "OpenSSL 3.0.19 27 Jan 2026").
std::string openssl_version();

}  // namespace ngxtls::tls
