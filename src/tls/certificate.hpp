#pragma once
// Facts about X.509 certificates, read with OpenSSL: what a configured ssl_certificate holds,
// and whether nginx can find the issuer it needs for OCSP stapling.

#include <openssl/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tls/errors.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::tls {

/// What one certificate says, in the terms the rules and the prober report.
struct certificate_info {
  std::string subject;   ///< one-line RFC 2253 form (XN_FLAG_RFC2253), e.g. "CN=example.com"
  std::string issuer;    ///< same form as subject
  std::string key_type;  ///< "RSA", "EC", "Ed25519", "Ed448", "DSA", ...; "unknown" otherwise
  int key_bits =
      0;  ///< EVP_PKEY_get_bits: RSA modulus bits, EC field bits (256 for P-256), Ed25519 256
  std::string curve;  ///< EC only: OpenSSL short name ("prime256v1", "secp384r1"); else empty
  std::int64_t not_before_unix = 0;    ///< notBefore, seconds since the Unix epoch (UTC)
  std::int64_t not_after_unix = 0;     ///< notAfter, seconds since the Unix epoch (UTC)
  std::vector<std::string> ocsp_urls;  ///< AIA OCSP responder URLs (what nginx staples from)
  std::vector<std::string> dns_names;  ///< SAN dNSName entries, in certificate order
  /// Subject == issuer and the certificate's own key verifies its signature
  /// (X509_self_signed(cert, 1)).
  bool self_signed = false;
  bool is_ca = false;      ///< basicConstraints CA:TRUE (EXFLAG_CA)
  std::string sha256_hex;  ///< SHA-256 fingerprint of the DER certificate, lowercase hex, no colons
  std::string serial_hex;  ///< serial number, uppercase hex (as `openssl x509 -serial`)
};

/// Reads the facts of one certificate. `cert` must not be null; it is not freed.
/// Throws openssl_error when OpenSSL cannot encode it.
certificate_info inspect_certificate_x509(X509* cert);

/// Every certificate in the PEM file at `pem_path`, in file order (nginx's convention:
/// the leaf first, then the chain). Other PEM blocks (keys, parameters) are skipped.
/// Throws file_error: missing (missing() true), unreadable, or no certificate in it.
std::vector<certificate_info> read_certificate_chain(const std::string& pem_path);

/// Every certificate in the PEM file at `pem_path`, decoded and not yet inspected, for callers
/// that ask several questions of one file (engine::file_facts). Throws file_error as
/// read_certificate_chain does.
std::vector<x509_ptr> read_certificates(const std::string& pem_path);

/// inspect_certificate_x509() of each certificate, in order.
std::vector<certificate_info> inspect_certificates(const std::vector<x509_ptr>& certs);

/// Same as read_certificate_chain for PEM text held in memory (nginx's `data:` certificates,
/// or files taken from an `nginx -T` dump). `name` only labels errors.
/// Throws file_error(name, "no certificate found") when the text holds none.
std::vector<certificate_info> parse_certificate_chain(std::string_view pem_text,
                                                      const std::string& name = "<memory>");

/// nginx's stapling precondition (docs/nginx-facts.md#ocsp-stapling-quiet): nginx needs the issuer
/// of the leaf among the certificates of ssl_certificate (after the leaf), ssl_trusted_certificate
/// and ssl_client_certificate (the latter two feed the same store), else `nginx -t` warns
/// `"ssl_stapling" ignored, issuer certificate not found for certificate "F"` and exits 0.
/// Measured on nginx 1.22.1 (tests/integration/test_tls_stapling_nginx.cpp): the
/// ssl_client_certificate CAs count only when `ssl_verify_client` is on/optional (nginx loads
/// that file only then), so callers pass it in `ca_files` only in that case.
/// Returns true when any certificate after the leaf in `chain_path`, or any certificate in
/// any of `ca_files`, issued the leaf (X509_check_issued == X509_V_OK). A self-signed leaf
/// alone is not its own issuer here (nginx skips the leaf itself). Unreadable `ca_files` are
/// skipped. Throws file_error when `chain_path` cannot be read or holds no certificate.
bool issuer_available(const std::string& chain_path, const std::vector<std::string>& ca_files);

/// issuer_available() over certificates already read: `chain` as read from ssl_certificate
/// (leaf first, not empty) and the certificates of each readable CA file.
bool issuer_available(const std::vector<x509_ptr>& chain,
                      const std::vector<const std::vector<x509_ptr>*>& ca_files);

/// A PEM private key file, read once: its key, or why nginx cannot use it. The key stays in
/// memory only to be matched against certificates; nothing prints or copies it.
struct private_key_file {
  evp_pkey_ptr key;  ///< null when the key cannot be used (then `problem` says why)
  /// "private key is encrypted (nginx needs ssl_password_file)" or "private key is malformed
  /// or of an unsupported type"; empty when `key` is set.
  std::string problem;
};

/// Reads the private key in `key_path` (PEM, unencrypted; an encrypted key is never prompted
/// for). Throws file_error when the file is missing or unreadable, or holds no PEM private key
/// block at all. Never reveals key material.
private_key_file read_private_key(const std::string& key_path);

/// Whether `key` belongs to the certificate `leaf` (X509_check_private_key, as nginx's
/// SSL_CTX_use_PrivateKey check does): std::nullopt when they match, else the short reason
/// key_matches_certificate() returns.
std::optional<std::string> key_matches_certificate(X509* leaf, const private_key_file& key);

/// Whether the private key in `key_path` (PEM, unencrypted) belongs to the first certificate
/// in `cert_path` (X509_check_private_key, as nginx's SSL_CTX_use_PrivateKey check does).
/// Returns std::nullopt when they match, else a short reason ("private key does not match the
/// certificate", "private key is encrypted (nginx needs ssl_password_file)", "private key is
/// malformed or of an unsupported type"). Never reveals key material.
/// Throws file_error when either file is missing or unreadable, `cert_path` holds no
/// certificate, or `key_path` holds no PEM private key block at all.
std::optional<std::string> key_matches_certificate(const std::string& cert_path,
                                                   const std::string& key_path);

}  // namespace ngxtls::tls
