#include "tls/certificate.hpp"

#include <openssl/core_names.h>
#include <openssl/decoder.h>
#include <openssl/pem.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "tls/file_read.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::tls {
namespace {

// The bytes of `path` (read_file_bounded: never a blocking read of a FIFO or device) as a
// BIO. A secure-memory BIO: key files pass through here, and it wipes what it held.
bio_ptr open_bio(const std::string& path) {
  std::string bytes = read_file_bounded(path);
  bio_ptr bio(BIO_new(BIO_s_secmem()));
  if (!bio) throw_openssl("BIO_new");
  const int wrote =
      bytes.empty() ? 0 : BIO_write(bio.get(), bytes.data(), static_cast<int>(bytes.size()));
  OPENSSL_cleanse(bytes.data(), bytes.size());
  if (wrote != static_cast<int>(bytes.size())) throw_openssl("BIO_write");
  return bio;
}

// Every PEM certificate in `bio`, in order; other PEM blocks are skipped by PEM_read_bio_X509.
std::vector<x509_ptr> read_x509s(BIO* bio, const std::string& name) {
  std::vector<x509_ptr> out;
  ERR_clear_error();
  for (;;) {
    x509_ptr cert(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
    if (!cert) break;
    out.push_back(std::move(cert));
  }
  unsigned long err = ERR_peek_last_error();
  bool clean_end =
      err == 0 || (ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE);
  ERR_clear_error();
  if (!clean_end) {
    // A read error (e.g. on a directory) shows up here as a system error.
    if (ERR_GET_LIB(err) == ERR_LIB_SYS)
      throw file_error(name, std::strerror(ERR_GET_REASON(err)), ERR_GET_REASON(err));
    throw file_error(name,
                     "malformed certificate after " + std::to_string(out.size()) + " good one(s)");
  }
  if (out.empty()) throw file_error(name, "no certificate found");
  return out;
}

std::vector<x509_ptr> load_x509s(const std::string& path) {
  bio_ptr bio = open_bio(path);
  return read_x509s(bio.get(), path);
}

std::string name_rfc2253(const X509_NAME* name) {
  bio_ptr bio(BIO_new(BIO_s_mem()));
  if (!bio) throw_openssl("BIO_new");
  if (X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253) < 0)
    throw_openssl("X509_NAME_print_ex");
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(len > 0 ? len : 0));
}

std::int64_t to_unix(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return static_cast<std::int64_t>(timegm(&tm));
}

std::string key_type_name(const EVP_PKEY* key) {
  switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_RSA:
      return "RSA";
    case EVP_PKEY_RSA_PSS:
      return "RSA-PSS";
    case EVP_PKEY_EC:
      return "EC";
    case EVP_PKEY_ED25519:
      return "Ed25519";
    case EVP_PKEY_ED448:
      return "Ed448";
    case EVP_PKEY_DSA:
      return "DSA";
    case EVP_PKEY_DH:
      return "DH";
    default:
      break;
  }
  const char* n = EVP_PKEY_get0_type_name(key);
  return n != nullptr ? n : "unknown";
}

}  // namespace

certificate_info inspect_certificate_x509(X509* cert) {
  certificate_info info;
  info.subject = name_rfc2253(X509_get_subject_name(cert));
  info.issuer = name_rfc2253(X509_get_issuer_name(cert));

  if (EVP_PKEY* key = X509_get0_pubkey(cert)) {
    info.key_type = key_type_name(key);
    info.key_bits = EVP_PKEY_get_bits(key);
    if (EVP_PKEY_get_base_id(key) == EVP_PKEY_EC) {
      char group[80] = {};
      std::size_t len = 0;
      if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group,
                                         &len) == 1)
        info.curve.assign(group, len);
    }
  } else {
    info.key_type = "unknown";
  }

  info.not_before_unix = to_unix(X509_get0_notBefore(cert));
  info.not_after_unix = to_unix(X509_get0_notAfter(cert));

  // AIA OCSP URLs: what nginx's ngx_ssl_stapling_responder reads (X509_get1_ocsp).
  if (STACK_OF(OPENSSL_STRING)* urls = X509_get1_ocsp(cert)) {
    for (int i = 0; i < sk_OPENSSL_STRING_num(urls); ++i)
      info.ocsp_urls.emplace_back(sk_OPENSSL_STRING_value(urls, i));
    X509_email_free(urls);
  }

  if (auto* names = static_cast<GENERAL_NAMES*>(
          X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr))) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
      const GENERAL_NAME* gn = sk_GENERAL_NAME_value(names, i);
      if (gn->type != GEN_DNS) continue;
      const ASN1_IA5STRING* s = gn->d.dNSName;
      info.dns_names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                  static_cast<std::size_t>(ASN1_STRING_length(s)));
    }
    GENERAL_NAMES_free(names);
  }

  ERR_set_mark();
  info.self_signed = X509_self_signed(cert, 1) == 1;  // names match and the signature verifies
  info.is_ca = (X509_get_extension_flags(cert) & EXFLAG_CA) != 0;
  ERR_pop_to_mark();

  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  if (X509_digest(cert, EVP_sha256(), md, &md_len) != 1) throw_openssl("X509_digest");
  info.sha256_hex = to_hex(md, md_len);

  if (const ASN1_INTEGER* serial = X509_get0_serialNumber(cert)) {
    bignum_ptr bn(ASN1_INTEGER_to_BN(serial, nullptr));
    if (bn) {
      char* hex = BN_bn2hex(bn.get());
      if (hex != nullptr) {
        info.serial_hex = hex;
        OPENSSL_free(hex);
      }
    }
  }
  return info;
}

std::vector<certificate_info> read_certificate_chain(const std::string& pem_path) {
  return inspect_certificates(load_x509s(pem_path));
}

std::vector<x509_ptr> read_certificates(const std::string& pem_path) {
  return load_x509s(pem_path);
}

std::vector<certificate_info> inspect_certificates(const std::vector<x509_ptr>& certs) {
  std::vector<certificate_info> out;
  out.reserve(certs.size());
  for (const auto& cert : certs) out.push_back(inspect_certificate_x509(cert.get()));
  return out;
}

std::vector<certificate_info> parse_certificate_chain(std::string_view pem_text,
                                                      const std::string& name) {
  bio_ptr bio(BIO_new_mem_buf(pem_text.data(), static_cast<int>(pem_text.size())));
  if (!bio) throw_openssl("BIO_new_mem_buf");
  std::vector<certificate_info> out;
  for (auto& cert : read_x509s(bio.get(), name))
    out.push_back(inspect_certificate_x509(cert.get()));
  return out;
}

bool issuer_available(const std::vector<x509_ptr>& chain,
                      const std::vector<const std::vector<x509_ptr>*>& ca_files) {
  X509* leaf = chain.front().get();
  // nginx ngx_ssl_stapling_issuer: first the extra chain certificates of ssl_certificate,
  // then the store (ssl_trusted_certificate, ssl_client_certificate), both by X509_check_issued.
  for (std::size_t i = 1; i < chain.size(); ++i)
    if (X509_check_issued(chain[i].get(), leaf) == X509_V_OK) return true;
  for (const auto* cas : ca_files)
    for (const auto& ca : *cas)
      if (X509_check_issued(ca.get(), leaf) == X509_V_OK) return true;
  return false;
}

bool issuer_available(const std::string& chain_path, const std::vector<std::string>& ca_files) {
  const std::vector<x509_ptr> chain = load_x509s(chain_path);
  std::vector<std::vector<x509_ptr>> read;
  read.reserve(ca_files.size());
  for (const auto& file : ca_files) {
    try {
      read.push_back(load_x509s(file));
    } catch (const file_error&) {
      // unreadable CA files are skipped: other rules report them
    }
  }
  std::vector<const std::vector<x509_ptr>*> cas;
  for (const auto& r : read) cas.push_back(&r);
  return issuer_available(chain, cas);
}

namespace {

// PEM_read_bio_PrivateKey's decoding with one decoder context per thread: OpenSSL 3 builds
// the context by matching every provider's decoders, which cost ten times the decoding of a
// key, and a config may name a thousand keys.
evp_pkey_ptr decode_private_key(BIO* bio) {
  struct decoder {
    EVP_PKEY* out = nullptr;  ///< where the context writes each key it decodes
    OSSL_DECODER_CTX* ctx = nullptr;
    decoder() {
      ctx = OSSL_DECODER_CTX_new_for_pkey(&out, "PEM", nullptr, nullptr, EVP_PKEY_KEYPAIR, nullptr,
                                          nullptr);
      // The empty-password callback makes an encrypted key fail instead of prompting.
      auto no_password = [](char*, int, int, void*) -> int { return 0; };
      if (ctx && OSSL_DECODER_CTX_set_pem_password_cb(ctx, no_password, nullptr) != 1) {
        OSSL_DECODER_CTX_free(ctx);
        ctx = nullptr;
      }
    }
    ~decoder() { OSSL_DECODER_CTX_free(ctx); }
    decoder(const decoder&) = delete;
    decoder& operator=(const decoder&) = delete;
  };
  thread_local decoder d;
  if (!d.ctx) throw_openssl("OSSL_DECODER_CTX_new_for_pkey");
  d.out = nullptr;
  // As PEM_read_bio_PrivateKey: blocks that hold no key pair (EC PARAMETERS before an EC
  // PRIVATE KEY) are skipped until the input ends.
  long pos = BIO_tell(bio);
  while (OSSL_DECODER_from_bio(d.ctx, bio) != 1 || d.out == nullptr) {
    EVP_PKEY_free(d.out);
    d.out = nullptr;
    const long now = BIO_tell(bio);
    if (BIO_eof(bio) != 0 || now < 0 || now <= pos) return nullptr;
    pos = now;
  }
  evp_pkey_ptr key(d.out);
  d.out = nullptr;
  return key;
}

}  // namespace

private_key_file read_private_key(const std::string& key_path) {
  bio_ptr bio = open_bio(key_path);
  ERR_clear_error();
  evp_pkey_ptr key = decode_private_key(bio.get());
  private_key_file out;
  if (key) {
    out.key = std::move(key);
    return out;
  }
  ERR_clear_error();
  // Tell "no key here" (a content error) from "a key we cannot use" by the PEM block
  // names alone; block contents are wiped unread.
  bio_ptr again = open_bio(key_path);
  bool any_key = false, encrypted = false;
  for (;;) {
    char* name = nullptr;
    char* header = nullptr;
    unsigned char* data = nullptr;
    long len = 0;
    if (PEM_read_bio(again.get(), &name, &header, &data, &len) != 1) break;
    std::string_view n(name), h(header != nullptr ? header : "");
    if (n.find("PRIVATE KEY") != std::string_view::npos) any_key = true;
    if (n.find("ENCRYPTED") != std::string_view::npos ||
        h.find("ENCRYPTED") != std::string_view::npos)
      encrypted = true;
    OPENSSL_free(name);
    OPENSSL_free(header);
    OPENSSL_clear_free(data, static_cast<std::size_t>(len));
  }
  ERR_clear_error();
  if (encrypted)
    out.problem = "private key is encrypted (nginx needs ssl_password_file)";
  else if (!any_key)
    throw file_error(key_path, "no private key found");
  else
    out.problem = "private key is malformed or of an unsupported type";
  return out;
}

std::optional<std::string> key_matches_certificate(X509* leaf, const private_key_file& key) {
  if (!key.key) return key.problem;
  ERR_set_mark();
  const int ok = X509_check_private_key(leaf, key.key.get());
  ERR_pop_to_mark();
  if (ok == 1) return std::nullopt;
  return std::string("private key does not match the certificate");
}

std::optional<std::string> key_matches_certificate(const std::string& cert_path,
                                                   const std::string& key_path) {
  const std::vector<x509_ptr> chain = load_x509s(cert_path);
  return key_matches_certificate(chain.front().get(), read_private_key(key_path));
}

}  // namespace ngxtls::tls
