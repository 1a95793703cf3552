#pragma once
// RAII owners for OpenSSL objects and small helpers shared by the tls layer (and the prober).

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

#include "tls/errors.hpp"

namespace ngxtls::tls {

/// unique_ptr with OpenSSL's free function as deleter: ossl_ptr<X509, X509_free>.
template <class T, void (*Free)(T*)>
struct ossl_deleter {
  void operator()(T* p) const noexcept {
    if (p != nullptr) Free(p);
  }
};
template <class T, void (*Free)(T*)>
using ossl_ptr = std::unique_ptr<T, ossl_deleter<T, Free>>;

using bio_ptr = ossl_ptr<BIO, BIO_free_all>;
using x509_ptr = ossl_ptr<X509, X509_free>;
using evp_pkey_ptr = ossl_ptr<EVP_PKEY, EVP_PKEY_free>;
using evp_pkey_ctx_ptr = ossl_ptr<EVP_PKEY_CTX, EVP_PKEY_CTX_free>;
using ssl_ctx_ptr = ossl_ptr<SSL_CTX, SSL_CTX_free>;
using ssl_ptr = ossl_ptr<SSL, SSL_free>;
using x509_name_ptr = ossl_ptr<X509_NAME, X509_NAME_free>;
using x509_extension_ptr = ossl_ptr<X509_EXTENSION, X509_EXTENSION_free>;
using ocsp_response_ptr = ossl_ptr<OCSP_RESPONSE, OCSP_RESPONSE_free>;
using ocsp_basicresp_ptr = ossl_ptr<OCSP_BASICRESP, OCSP_BASICRESP_free>;
using ocsp_certid_ptr = ossl_ptr<OCSP_CERTID, OCSP_CERTID_free>;
using asn1_time_ptr = ossl_ptr<ASN1_TIME, ASN1_TIME_free>;
using asn1_integer_ptr = ossl_ptr<ASN1_INTEGER, ASN1_INTEGER_free>;
using bignum_ptr = ossl_ptr<BIGNUM, BN_free>;

/// Frees a STACK_OF(X509) and the certificates in it.
struct x509_stack_deleter {
  void operator()(STACK_OF(X509) * s) const noexcept { sk_X509_pop_free(s, X509_free); }
};
using x509_stack_ptr = std::unique_ptr<STACK_OF(X509), x509_stack_deleter>;

/// Drains OpenSSL's error queue of this thread into one line ("error:...; error:..."),
/// or "" when it is empty.
std::string drain_openssl_errors();

/// Throws openssl_error("WHAT: <drained OpenSSL errors>").
[[noreturn]] void throw_openssl(const std::string& what);

/// Lowercase hex of `n` bytes.
std::string to_hex(const unsigned char* data, std::size_t n);

}  // namespace ngxtls::tls
