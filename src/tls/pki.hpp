#pragma once
// Real, throwaway PKI made with the OpenSSL API (not the CLI): tests, `check --sandbox`
// stand-ins (same key type and size, OCSP URL present or not) and `harden`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tls/certificate.hpp"
#include "tls/errors.hpp"

namespace ngxtls::tls {

/// What to generate. The leaf's subject is CN=<first dns name> (CN=localhost without names).
struct pki_options {
  std::string key_type = "ec";  ///< leaf key: "ec", "rsa" or "ed25519"
  int rsa_bits = 2048;          ///< RSA modulus bits (key_type "rsa")
  std::string curve =
      "prime256v1";  ///< EC curve, OpenSSL short or NIST name ("secp384r1", "P-384")
  std::vector<std::string> dns_names = {"localhost"};  ///< SAN dNSNames of the leaf
  std::optional<std::string>
      ocsp_url;              ///< AIA OCSP URL on the leaf (e.g. "http://127.0.0.1:8889/");
                             ///< none: like Let's Encrypt certificates since 2025-05
  bool intermediate = true;  ///< root CA -> intermediate CA -> leaf; false: root -> leaf
  bool self_signed = false;  ///< a self-signed leaf with no issuer anywhere (no CA files written)
  int days = 365;            ///< leaf validity from now, in days (when not_after_offset_s is unset)
  std::optional<std::int64_t>
      not_after_offset_s;  ///< leaf notAfter = now + this (negative: expired)
  std::optional<std::int64_t> not_before_offset_s;  ///< leaf notBefore = now + this (default now -
                                                    ///< 60 s; positive: not yet valid)
  std::string ca_key_type =
      "ec";  ///< key type of the root and intermediate ("ec" P-256 or "rsa" 2048)
};

/// Where make_pki wrote each file (absolute or as `dir` was given). Fields that do not apply
/// (intermediate_* without an intermediate; root_*, issuer, ocsp_index for a self-signed leaf)
/// are empty.
struct pki_paths {
  std::string root_cert, root_key;
  std::string intermediate_cert, intermediate_key;
  std::string leaf_cert, leaf_key;
  std::string
      chain;  ///< leaf + intermediate (PEM), for ssl_certificate; leaf alone without intermediate
  std::string issuer;      ///< the leaf's issuer certificate alone, for ssl_trusted_certificate
  std::string issuer_key;  ///< the key of `issuer` (signs OCSP responses)
  std::string
      ocsp_index;  ///< `openssl ca` index.txt listing the leaf as V, for `openssl ocsp -index`
};

/// Generates a PKI under `dir` (created if needed): files root.crt root.key, intermediate.crt
/// intermediate.key, leaf.crt leaf.key, chain.pem, issuer.crt, index.txt. Keys are written
/// unencrypted PEM (PKCS#8) with mode 0600. CAs carry basicConstraints CA:TRUE and
/// keyUsage keyCertSign, cRLSign, digitalSignature (so the issuer may sign OCSP responses); the
/// leaf CA:FALSE, serverAuth, SANs, SKI/AKI. Serials are random 64-bit. Throws
/// std::invalid_argument for unknown key types/curves, file_error when a file cannot be written,
/// openssl_error when OpenSSL fails.
pki_paths make_pki(const std::string& dir, const pki_options& options = {});

/// OCSP certificate status to put in a generated response.
enum class ocsp_cert_status { good, revoked };

/// Writes a DER OCSP response (for ssl_stapling_file and tests) for the leaf of `pki`,
/// signed by the leaf's issuer (issuer/issuer_key), responder id by key hash,
/// status `status`, thisUpdate now, nextUpdate now + `validity_s` seconds.
/// Throws std::invalid_argument for a self-signed PKI (no issuer), file_error or openssl_error.
void write_ocsp_response(const pki_paths& pki, const std::string& der_path,
                         std::int64_t validity_s = 86400,
                         ocsp_cert_status status = ocsp_cert_status::good);

/// Options for a stand-in of a real certificate (`check --sandbox`): same key type and size
/// (RSA bits, EC curve, Ed25519), same SAN dNSNames (CN=localhost when none), the same
/// remaining lifetime (notAfter - now, so expired stays expired), and an OCSP URL only when
/// the real leaf has one: then `local_ocsp_url` (a local responder) replaces it, so stapling
/// behaves as it would for the real certificate without touching the network. Issued through
/// an intermediate like public certificates.
/// Throws std::invalid_argument for key types make_pki cannot make (DSA, Ed448, ...), or when
/// the real leaf has an OCSP URL and `local_ocsp_url` is empty.
pki_options stand_in_options(const certificate_info& real, const std::string& local_ocsp_url = "");

}  // namespace ngxtls::tls
