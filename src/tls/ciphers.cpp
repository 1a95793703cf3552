#include "tls/ciphers.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "tls/openssl_ptr.hpp"

namespace ngxtls::tls {
namespace {

ssl_ctx_ptr fresh_ctx() {
  ssl_ctx_ptr ctx(SSL_CTX_new(TLS_method()));
  if (!ctx) throw_openssl("SSL_CTX_new");
  return ctx;
}

// SSL_CIPHER_description prints the `openssl ciphers -v` line:
// "NAME VERSION Kx=KX Au=AU Enc=ENC Mac=MAC"; its fields are what operators know.
cipher_info describe(const SSL_CIPHER* c) {
  cipher_info info;
  info.name = SSL_CIPHER_get_name(c);
  if (const char* std_name = SSL_CIPHER_standard_name(c)) info.iana_name = std_name;
  info.protocol = SSL_CIPHER_get_version(c);
  info.bits = SSL_CIPHER_get_bits(c, nullptr);
  info.aead = SSL_CIPHER_is_aead(c) != 0;
  info.id = SSL_CIPHER_get_protocol_id(c);
  char buf[256];
  if (SSL_CIPHER_description(c, buf, sizeof buf) != nullptr) {
    std::istringstream in(buf);
    std::string field;
    while (in >> field) {
      auto take = [&](std::string_view prefix, std::string& out) {
        if (field.compare(0, prefix.size(), prefix) == 0) out = field.substr(prefix.size());
      };
      take("Kx=", info.kx);
      take("Au=", info.auth);
      take("Enc=", info.enc);
      take("Mac=", info.mac);
    }
  }
  return info;
}

// TLS 1.3 suites negotiate key exchange and authentication separately (Kx=any Au=any) and
// name TLSv1.3 as their version; libssl has no public "min version" accessor.
bool is_tls13(const SSL_CIPHER* c) {
  return std::string_view(SSL_CIPHER_get_version(c)) == "TLSv1.3" ||
         SSL_CIPHER_get_kx_nid(c) == NID_kx_any;
}

}  // namespace

std::vector<cipher_info> expand_cipher_string(const std::string& spec) {
  ssl_ctx_ptr ctx = fresh_ctx();
  ERR_clear_error();
  // Returns 0 when no TLS 1.2-and-below cipher matches (SSL_R_NO_CIPHER_MATCH).
  if (SSL_CTX_set_cipher_list(ctx.get(), spec.c_str()) != 1) {
    std::string errs = drain_openssl_errors();
    throw std::invalid_argument("no cipher matches \"" + spec + "\"" +
                                (errs.empty() ? "" : " (" + errs + ")"));
  }
  std::vector<cipher_info> out;
  // What the security level leaves: the suites an SSL of this context can negotiate.
  std::vector<unsigned> negotiable;
  if (ssl_ptr ssl{SSL_new(ctx.get())}) {
    if (STACK_OF(SSL_CIPHER)* sup = SSL_get1_supported_ciphers(ssl.get())) {
      for (int i = 0; i < sk_SSL_CIPHER_num(sup); ++i)
        negotiable.push_back(SSL_CIPHER_get_protocol_id(sk_SSL_CIPHER_value(sup, i)));
      sk_SSL_CIPHER_free(sup);
    }
  }
  STACK_OF(SSL_CIPHER)* list = SSL_CTX_get_ciphers(ctx.get());
  for (int i = 0; i < sk_SSL_CIPHER_num(list); ++i) {
    const SSL_CIPHER* c = sk_SSL_CIPHER_value(list, i);
    // The TLS 1.3 suites come first in the combined list; they are configured separately.
    if (is_tls13(c)) continue;
    out.push_back(describe(c));
    out.back().negotiable =
        std::find(negotiable.begin(), negotiable.end(), out.back().id) != negotiable.end();
  }
  if (out.empty()) throw std::invalid_argument("no cipher matches \"" + spec + "\"");
  return out;
}

std::vector<cipher_info> expand_tls13_ciphersuites(const std::string& spec) {
  ssl_ctx_ptr ctx = fresh_ctx();
  ERR_clear_error();
  if (!spec.empty() && SSL_CTX_set_ciphersuites(ctx.get(), spec.c_str()) != 1) {
    std::string errs = drain_openssl_errors();
    throw std::invalid_argument("invalid TLS 1.3 ciphersuites \"" + spec + "\"" +
                                (errs.empty() ? "" : " (" + errs + ")"));
  }
  std::vector<cipher_info> out;
  STACK_OF(SSL_CIPHER)* list = SSL_CTX_get_ciphers(ctx.get());
  for (int i = 0; i < sk_SSL_CIPHER_num(list); ++i) {
    const SSL_CIPHER* c = sk_SSL_CIPHER_value(list, i);
    if (is_tls13(c)) out.push_back(describe(c));
  }
  if (out.empty()) throw std::invalid_argument("no TLS 1.3 ciphersuite in \"" + spec + "\"");
  return out;
}

std::string openssl_version() {
  // "OpenSSL 3.0.19 27 Jan 2026" -> "3.0.19"
  std::istringstream in(OpenSSL_version(OPENSSL_VERSION));
  std::string product, version;
  in >> product >> version;
  return version.empty() ? product : version;
}

}  // namespace ngxtls::tls
