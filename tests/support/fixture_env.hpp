#pragma once
// Real key material for rule fixtures and demos, generated per test run (never committed).

#include <filesystem>

namespace ngxtls::test {

/// Writes under `dir`:
///   keys/k1.key k2.key k3.key  80-byte ticket keys (0600); keys/k1-copy.key same bytes as k1
///   keys/k48.key  48 bytes; keys/short.key  50 bytes (invalid); keys/open.key  80 bytes, mode 0644
///   keys/k8.quic  8 bytes; keys/empty.quic  0 bytes (QUIC host keys nginx takes and refuses)
///   pki/noocsp/   root -> intermediate -> leaf without OCSP URL (+ ocsp.der, a good response;
///                 leaf-world.key 0644 and leaf-group.key 0640 copies of leaf.key;
///                 password-world.txt, 16 random bytes, 0644)
///   pki/ocspip/   leaf with OCSP URL http://127.0.0.1:9/
///   pki/ocsphost/ leaf with OCSP URL http://ocsp.example.test/
///   pki/self/     self-signed leaf
/// each pki dir as tls::make_pki lays it out (leaf.crt, leaf.key, chain.pem, issuer.crt, ...).
/// Throws on failure.
void make_fixture_material(const std::filesystem::path& dir);

/// Certificate variants for the certificate rules, written under `dir`/pki (EC P-256 leaves
/// through an intermediate unless said otherwise; SANs example.test and *.example.test):
///   pki/named/      a good chain (chain.pem), 365 days
///   pki/rsa1024/    RSA 1024-bit leaf            pki/p521/     EC P-521 leaf
///   pki/expired/    leaf expired a day ago       pki/expiring/ leaf expiring in 10 days
///   pki/named/reversed.pem  intermediate first, then the leaf (out of order)
/// Pair pki/named/chain.pem with pki/p521/leaf.key for a key that does not match.
/// Throws on failure.
void make_certificate_material(const std::filesystem::path& dir);

}  // namespace ngxtls::test
