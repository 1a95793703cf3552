#include "tls/pki.hpp"

#include <fcntl.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "tls/openssl_ptr.hpp"

namespace ngxtls::tls {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t day_s = 86400;

std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// An output file opened with `mode` (re-applied with fchmod, so an existing file is fixed
// too) and wrapped in a BIO. finish() flushes and closes and reports errors.
class out_file {
 public:
  out_file(std::string path, mode_t mode) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd_ < 0) fail(errno);
    if (::fchmod(fd_, mode) != 0) {
      int e = errno;
      ::close(fd_);
      fail(e);
    }
    bio_.reset(BIO_new_fd(fd_, BIO_NOCLOSE));
    if (!bio_) {
      ::close(fd_);
      throw_openssl("BIO_new_fd");
    }
  }
  ~out_file() {
    if (fd_ >= 0) ::close(fd_);
  }
  out_file(const out_file&) = delete;
  out_file& operator=(const out_file&) = delete;
  BIO* bio() { return bio_.get(); }
  void write(const std::string& text) {
    if (BIO_write(bio_.get(), text.data(), static_cast<int>(text.size())) !=
        static_cast<int>(text.size()))
      fail(errno ? errno : EIO);
  }
  void finish() {
    if (BIO_flush(bio_.get()) != 1) fail(errno ? errno : EIO);
    bio_.reset();
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail(errno);
  }
  [[noreturn]] void fail(int e) { throw file_error(path_, std::strerror(e), e); }

 private:
  std::string path_;
  int fd_ = -1;
  bio_ptr bio_;
};

evp_pkey_ptr generate_key(const std::string& type, int rsa_bits, const std::string& curve) {
  ERR_clear_error();
  EVP_PKEY* key = nullptr;
  if (type == "ec") {
    key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve.c_str());
    if (key == nullptr)
      throw std::invalid_argument("cannot make an EC key on curve \"" + curve +
                                  "\": " + drain_openssl_errors());
  } else if (type == "rsa") {
    if (rsa_bits < 1024 || rsa_bits > 16384)
      throw std::invalid_argument("RSA key size out of range: " + std::to_string(rsa_bits));
    key = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<std::size_t>(rsa_bits));
  } else if (type == "ed25519") {
    key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  } else {
    throw std::invalid_argument("unknown key type \"" + type + "\" (ec, rsa or ed25519)");
  }
  if (key == nullptr) throw_openssl("key generation (" + type + ")");
  return evp_pkey_ptr(key);
}

// Ed25519/Ed448 sign without a separate digest.
const EVP_MD* signing_digest(EVP_PKEY* key) {
  int id = EVP_PKEY_get_base_id(key);
  return (id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448) ? nullptr : EVP_sha256();
}

void add_ext(X509* cert, X509V3_CTX* ctx, int nid, const std::string& value) {
  x509_extension_ptr ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value.c_str()));
  if (!ext) throw_openssl("extension " + std::string(OBJ_nid2sn(nid)) + "=" + value);
  if (X509_add_ext(cert, ext.get(), -1) != 1) throw_openssl("X509_add_ext");
}

void set_random_serial(X509* cert) {
  unsigned char raw[8];
  if (RAND_bytes(raw, sizeof raw) != 1) throw_openssl("RAND_bytes");
  raw[0] &= 0x7f;  // positive
  raw[0] |= 0x10;  // eight full bytes, so serial hex has a stable width
  bignum_ptr bn(BN_bin2bn(raw, sizeof raw, nullptr));
  if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)) == nullptr)
    throw_openssl("serial");
}

struct cert_spec {
  std::string common_name;
  std::string organization = "ngxtls test";
  bool ca = false;
  std::int64_t not_before = 0, not_after = 0;  // unix seconds
  std::vector<std::string> dns_names;
  std::optional<std::string> ocsp_url;
};

// Makes a certificate for `key` signed by `issuer_key`; `issuer` null means self-signed.
x509_ptr make_cert(const cert_spec& spec, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key) {
  x509_ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1) throw_openssl("X509_new");
  set_random_serial(cert.get());
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (!spec.organization.empty() &&
      X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(spec.organization.c_str()),
                                 -1, -1, 0) != 1)
    throw_openssl("subject O");
  if (X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(spec.common_name.c_str()),
                                 -1, -1, 0) != 1)
    throw_openssl("subject CN");
  X509* signer = issuer != nullptr ? issuer : cert.get();
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) != 1)
    throw_openssl("issuer name");
  if (ASN1_TIME_set(X509_getm_notBefore(cert.get()), static_cast<time_t>(spec.not_before)) ==
          nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(cert.get()), static_cast<time_t>(spec.not_after)) == nullptr)
    throw_openssl("validity");
  if (X509_set_pubkey(cert.get(), key) != 1) throw_openssl("X509_set_pubkey");

  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, signer, cert.get(), nullptr, nullptr, 0);
  int key_id = EVP_PKEY_get_base_id(key);
  if (spec.ca) {
    add_ext(cert.get(), &ctx, NID_basic_constraints, "critical,CA:TRUE");
    // digitalSignature: the issuing CA also signs OCSP responses for its leaves (openssl ocsp
    // -rsigner ISSUER), and OpenSSL's OCSP checks accept the issuer itself as responder.
    add_ext(cert.get(), &ctx, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
  } else {
    add_ext(cert.get(), &ctx, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(cert.get(), &ctx, NID_key_usage,
            key_id == EVP_PKEY_RSA ? "critical,digitalSignature,keyEncipherment"
                                   : "critical,digitalSignature");
    add_ext(cert.get(), &ctx, NID_ext_key_usage, "serverAuth,clientAuth");
  }
  add_ext(cert.get(), &ctx, NID_subject_key_identifier, "hash");
  add_ext(cert.get(), &ctx, NID_authority_key_identifier, "keyid:always");
  if (!spec.dns_names.empty()) {
    std::string san;
    for (const auto& n : spec.dns_names) san += (san.empty() ? "DNS:" : ",DNS:") + n;
    add_ext(cert.get(), &ctx, NID_subject_alt_name, san);
  }
  if (spec.ocsp_url) add_ext(cert.get(), &ctx, NID_info_access, "OCSP;URI:" + *spec.ocsp_url);

  if (X509_sign(cert.get(), issuer_key, signing_digest(issuer_key)) <= 0)
    throw_openssl("X509_sign");
  return cert;
}

void write_certs(const std::string& path, std::initializer_list<X509*> certs) {
  out_file f(path, 0644);
  for (X509* c : certs)
    if (PEM_write_bio_X509(f.bio(), c) != 1) throw_openssl("PEM_write_bio_X509 " + path);
  f.finish();
}

void write_key(const std::string& path, EVP_PKEY* key) {
  out_file f(path, 0600);
  if (PEM_write_bio_PrivateKey(f.bio(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    throw_openssl("PEM_write_bio_PrivateKey");
  f.finish();
}

std::string serial_hex(X509* cert) {
  bignum_ptr bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  if (!bn) throw_openssl("serial");
  char* hex = BN_bn2hex(bn.get());
  if (hex == nullptr) throw_openssl("BN_bn2hex");
  std::string out = hex;
  OPENSSL_free(hex);
  return out;
}

// `openssl ca` index.txt line: status, expiry (UTCTime, as `openssl ca` writes it),
// revocation date (empty), serial (BN_bn2hex, what `openssl ocsp` looks up), file, subject.
std::string index_line(X509* cert) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1) throw_openssl("notAfter");
  char when[32];
  // RFC 5280 times: UTCTime (two-digit year) until 2049, GeneralizedTime from 2050.
  std::strftime(when, sizeof when, tm.tm_year + 1900 < 2050 ? "%y%m%d%H%M%SZ" : "%Y%m%d%H%M%SZ",
                &tm);
  char* subject = X509_NAME_oneline(X509_get_subject_name(cert), nullptr, 0);
  if (subject == nullptr) throw_openssl("X509_NAME_oneline");
  std::string line =
      std::string("V\t") + when + "\t\t" + serial_hex(cert) + "\tunknown\t" + subject + "\n";
  OPENSSL_free(subject);
  return line;
}

x509_ptr load_cert(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    int e = errno;
    throw file_error(path, std::strerror(e), e);
  }
  x509_ptr cert(PEM_read_X509(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  if (!cert) throw file_error(path, "no certificate found");
  ERR_clear_error();
  return cert;
}

evp_pkey_ptr load_key(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    int e = errno;
    throw file_error(path, std::strerror(e), e);
  }
  evp_pkey_ptr key(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  if (!key) throw file_error(path, "no private key found");
  ERR_clear_error();
  return key;
}

}  // namespace

pki_paths make_pki(const std::string& dir, const pki_options& options) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw file_error(dir, ec.message(), ec.value());
  auto at = [&](const char* name) { return (fs::path(dir) / name).string(); };

  const std::int64_t now = now_unix();
  cert_spec leaf_spec;
  leaf_spec.common_name = options.dns_names.empty() ? "localhost" : options.dns_names.front();
  leaf_spec.organization.clear();
  leaf_spec.dns_names = options.dns_names;
  leaf_spec.ocsp_url = options.ocsp_url;
  leaf_spec.not_before = now + options.not_before_offset_s.value_or(-60);
  leaf_spec.not_after =
      now + options.not_after_offset_s.value_or(static_cast<std::int64_t>(options.days) * day_s);
  if (leaf_spec.not_after <= leaf_spec.not_before)
    leaf_spec.not_before = leaf_spec.not_after - day_s;

  evp_pkey_ptr leaf_key = generate_key(options.key_type, options.rsa_bits, options.curve);
  pki_paths paths;
  paths.leaf_cert = at("leaf.crt");
  paths.leaf_key = at("leaf.key");
  paths.chain = at("chain.pem");

  if (options.self_signed) {
    x509_ptr leaf = make_cert(leaf_spec, leaf_key.get(), nullptr, leaf_key.get());
    write_key(paths.leaf_key, leaf_key.get());
    write_certs(paths.leaf_cert, {leaf.get()});
    write_certs(paths.chain, {leaf.get()});
    return paths;
  }

  // CAs: valid from a day ago until at least ten years on, and past the leaf.
  cert_spec ca_spec;
  ca_spec.ca = true;
  ca_spec.not_before = std::min(now - day_s, leaf_spec.not_before);
  ca_spec.not_after = std::max(now + 3650 * day_s, leaf_spec.not_after);
  auto ca_key = [&] { return generate_key(options.ca_key_type, 2048, "prime256v1"); };

  evp_pkey_ptr root_key = ca_key();
  ca_spec.common_name = "ngxtls test root CA";
  x509_ptr root = make_cert(ca_spec, root_key.get(), nullptr, root_key.get());
  paths.root_cert = at("root.crt");
  paths.root_key = at("root.key");
  write_key(paths.root_key, root_key.get());
  write_certs(paths.root_cert, {root.get()});

  X509* issuer = root.get();
  EVP_PKEY* issuer_key = root_key.get();
  paths.issuer_key = paths.root_key;
  x509_ptr inter;
  evp_pkey_ptr inter_key;
  if (options.intermediate) {
    inter_key = ca_key();
    ca_spec.common_name = "ngxtls test intermediate CA";
    inter = make_cert(ca_spec, inter_key.get(), root.get(), root_key.get());
    paths.intermediate_cert = at("intermediate.crt");
    paths.intermediate_key = at("intermediate.key");
    write_key(paths.intermediate_key, inter_key.get());
    write_certs(paths.intermediate_cert, {inter.get()});
    issuer = inter.get();
    issuer_key = inter_key.get();
    paths.issuer_key = paths.intermediate_key;
  }

  x509_ptr leaf = make_cert(leaf_spec, leaf_key.get(), issuer, issuer_key);
  write_key(paths.leaf_key, leaf_key.get());
  write_certs(paths.leaf_cert, {leaf.get()});
  if (inter)
    write_certs(paths.chain, {leaf.get(), inter.get()});
  else
    write_certs(paths.chain, {leaf.get()});
  // issuer.crt: the leaf's issuer alone, for ssl_trusted_certificate.
  paths.issuer = at("issuer.crt");
  write_certs(paths.issuer, {issuer});

  paths.ocsp_index = at("index.txt");
  out_file idx(paths.ocsp_index, 0644);
  idx.write(index_line(leaf.get()));
  idx.finish();
  return paths;
}

void write_ocsp_response(const pki_paths& pki, const std::string& der_path, std::int64_t validity_s,
                         ocsp_cert_status status) {
  if (pki.issuer.empty() || pki.issuer_key.empty())
    throw std::invalid_argument("write_ocsp_response: the PKI has no issuer (self-signed leaf)");
  x509_ptr leaf = load_cert(pki.leaf_cert);
  x509_ptr issuer = load_cert(pki.issuer);
  evp_pkey_ptr key = load_key(pki.issuer_key);

  // CertID with SHA-1 hashes, as OpenSSL clients (and nginx) build their requests.
  ocsp_certid_ptr id(OCSP_cert_to_id(EVP_sha1(), leaf.get(), issuer.get()));
  if (!id) throw_openssl("OCSP_cert_to_id");
  ocsp_basicresp_ptr basic(OCSP_BASICRESP_new());
  if (!basic) throw_openssl("OCSP_BASICRESP_new");
  const std::int64_t now = now_unix();
  asn1_time_ptr this_update(ASN1_TIME_set(nullptr, static_cast<time_t>(now)));
  asn1_time_ptr next_update(ASN1_TIME_set(nullptr, static_cast<time_t>(now + validity_s)));
  asn1_time_ptr revoked_at(ASN1_TIME_set(nullptr, static_cast<time_t>(now - 3600)));
  if (!this_update || !next_update || !revoked_at) throw_openssl("ASN1_TIME_set");
  const bool revoked = status == ocsp_cert_status::revoked;
  if (OCSP_basic_add1_status(
          basic.get(), id.get(), revoked ? V_OCSP_CERTSTATUS_REVOKED : V_OCSP_CERTSTATUS_GOOD,
          revoked ? OCSP_REVOKED_STATUS_KEYCOMPROMISE : 0, revoked ? revoked_at.get() : nullptr,
          this_update.get(), next_update.get()) == nullptr)
    throw_openssl("OCSP_basic_add1_status");
  if (OCSP_basic_sign(basic.get(), issuer.get(), key.get(), signing_digest(key.get()), nullptr,
                      OCSP_RESPID_KEY) != 1)
    throw_openssl("OCSP_basic_sign");
  ocsp_response_ptr resp(OCSP_response_create(OCSP_RESPONSE_STATUS_SUCCESSFUL, basic.get()));
  if (!resp) throw_openssl("OCSP_response_create");
  unsigned char* der = nullptr;
  int len = i2d_OCSP_RESPONSE(resp.get(), &der);
  if (len <= 0) throw_openssl("i2d_OCSP_RESPONSE");
  std::string bytes(reinterpret_cast<const char*>(der), static_cast<std::size_t>(len));
  OPENSSL_free(der);
  out_file f(der_path, 0644);
  f.write(bytes);
  f.finish();
}

pki_options stand_in_options(const certificate_info& real, const std::string& local_ocsp_url) {
  pki_options opt;
  if (real.key_type == "RSA") {
    opt.key_type = "rsa";
    opt.rsa_bits = real.key_bits;
  } else if (real.key_type == "EC") {
    opt.key_type = "ec";
    opt.curve = real.curve;
  } else if (real.key_type == "Ed25519") {
    opt.key_type = "ed25519";
  } else {
    throw std::invalid_argument("no stand-in for " + real.key_type + " keys");
  }
  if (!real.dns_names.empty()) opt.dns_names = real.dns_names;
  if (!real.ocsp_urls.empty()) {
    if (local_ocsp_url.empty())
      throw std::invalid_argument(
          "the certificate has an OCSP URL: a local responder URL is needed");
    opt.ocsp_url = local_ocsp_url;
  }
  opt.not_after_offset_s = real.not_after_unix - now_unix();
  return opt;
}

}  // namespace ngxtls::tls
