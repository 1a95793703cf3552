#pragma once
// Real key material for rule fixtures and demos, generated per test run (never committed).

#include <filesystem>

namespace ngxtls::test {

/// Writes under `dir`:
///   keys/k1.key k2.key k3.key  80-byte ticket keys (0600); keys/k1-copy.key same bytes as k1
///   keys/k48.key  48 bytes; keys/short.key  50 bytes (invalid); keys/open.key  80 bytes, mode 0644
///   pki/noocsp/   root -> intermediate -> leaf without OCSP URL (+ ocsp.der, a good response)
///   pki/ocspip/   leaf with OCSP URL http://127.0.0.1:9/
///   pki/ocsphost/ leaf with OCSP URL http://ocsp.example.test/
///   pki/self/     self-signed leaf
/// each pki dir as tls::make_pki lays it out (leaf.crt, leaf.key, chain.pem, issuer.crt, ...).
/// Throws on failure.
void make_fixture_material(const std::filesystem::path& dir);

}  // namespace ngxtls::test
