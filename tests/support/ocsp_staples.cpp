#include "support/ocsp_staples.hpp"

#include <netinet/in.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "support/process.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::test {
namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  if (!f) throw std::runtime_error("cannot write " + path);
}

void must(const std::vector<std::string>& argv) {
  auto r = run(argv, "", 60);
  if (r.exit_code != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    throw std::runtime_error(cmd + "failed: " + r.err + r.out);
  }
}

// `openssl ocsp` as a local responder: builds the request for -issuer/-cert (or -serial),
// answers it from `index` and writes the DER response.
void local_ocsp(const std::string& index, const std::string& ca, const std::string& issuer,
                const std::string& signer, const std::string& signer_key, const std::string& out,
                std::vector<std::string> extra) {
  std::vector<std::string> argv = {"openssl",  "ocsp", "-index", index,      "-CA",      ca,
                                   "-rsigner", signer, "-rkey",  signer_key, "-issuer",  issuer,
                                   "-respout", out,    "-ndays", "1",        "-no_nonce"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  must(argv);
}

// A certificate for CN=`name` issued by `ca`/`ca_key` with the extensions in `ext` (an
// `openssl x509 -extfile` text); writes NAME.crt and NAME.key under `dir`.
std::pair<std::string, std::string> issue(const std::string& dir, const std::string& name,
                                          const std::string& ca, const std::string& ca_key,
                                          const std::string& ext) {
  const std::string key = dir + "/" + name + ".key", csr = dir + "/" + name + ".csr",
                    crt = dir + "/" + name + ".crt", extf = dir + "/" + name + ".ext";
  write_bytes(extf, ext);
  must({"openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", key, "-out", csr, "-subj", "/CN=" + name});
  std::random_device rd;
  char serial[32];
  std::snprintf(serial, sizeof serial, "0x%08x%08x", rd(), rd());
  must({"openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-set_serial", serial,
        "-days", "2", "-extfile", extf, "-out", crt});
  return {crt, key};
}

tls::x509_ptr load_cert(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error("cannot open " + path);
  tls::x509_ptr c(PEM_read_X509(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  if (!c) throw std::runtime_error("no certificate in " + path);
  return c;
}

tls::evp_pkey_ptr load_key(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error("cannot open " + path);
  tls::evp_pkey_ptr k(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  if (!k) throw std::runtime_error("no key in " + path);
  return k;
}

std::string der_of(OCSP_RESPONSE* resp) {
  unsigned char* der = nullptr;
  int len = i2d_OCSP_RESPONSE(resp, &der);
  if (len <= 0) throw std::runtime_error("i2d_OCSP_RESPONSE failed");
  std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(len));
  OPENSSL_free(der);
  return out;
}

// A good response for the leaf signed by the issuer with thisUpdate/nextUpdate at now + the
// offsets: `openssl ocsp` only makes windows that start now.
std::string good_at(const tls::pki_paths& pki, long this_offset_s, long next_offset_s) {
  auto leaf = load_cert(pki.leaf_cert);
  auto issuer = load_cert(pki.issuer);
  auto key = load_key(pki.issuer_key);
  tls::ocsp_certid_ptr id(OCSP_cert_to_id(EVP_sha1(), leaf.get(), issuer.get()));
  tls::ocsp_basicresp_ptr basic(OCSP_BASICRESP_new());
  const std::time_t now = std::time(nullptr);
  tls::asn1_time_ptr this_update(ASN1_GENERALIZEDTIME_set(nullptr, now + this_offset_s));
  tls::asn1_time_ptr next_update(ASN1_GENERALIZEDTIME_set(nullptr, now + next_offset_s));
  if (!id || !basic || !this_update || !next_update ||
      OCSP_basic_add1_status(basic.get(), id.get(), V_OCSP_CERTSTATUS_GOOD, 0, nullptr,
                             this_update.get(), next_update.get()) == nullptr ||
      OCSP_basic_sign(basic.get(), issuer.get(), key.get(), EVP_sha256(), nullptr,
                      OCSP_RESPID_KEY) != 1)
    throw std::runtime_error("cannot build an OCSP response");
  tls::ocsp_response_ptr resp(OCSP_response_create(OCSP_RESPONSE_STATUS_SUCCESSFUL, basic.get()));
  if (!resp) throw std::runtime_error("OCSP_response_create failed");
  return der_of(resp.get());
}

// DER length octets.
std::string der_len(std::size_t n) {
  if (n < 128) return std::string(1, static_cast<char>(n));
  std::string bytes;
  for (; n > 0; n >>= 8) bytes.insert(bytes.begin(), static_cast<char>(n & 0xff));
  return std::string(1, static_cast<char>(0x80 | bytes.size())) + bytes;
}

std::string tlv(unsigned char tag, const std::string& body) {
  return std::string(1, static_cast<char>(tag)) + der_len(body.size()) + body;
}

std::string random_bytes(std::size_t n) {
  std::mt19937 gen(20261201);
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += static_cast<char>(gen() & 0xff);
  return out;
}

}  // namespace

const char* to_string(staple_kind k) {
  switch (k) {
    case staple_kind::good:
      return "good";
    case staple_kind::good_no_certs:
      return "good_no_certs";
    case staple_kind::good_sha256_certid:
      return "good_sha256_certid";
    case staple_kind::two_singles:
      return "two_singles";
    case staple_kind::delegated:
      return "delegated";
    case staple_kind::delegated_without_eku:
      return "delegated_without_eku";
    case staple_kind::delegated_by_other_ca:
      return "delegated_by_other_ca";
    case staple_kind::signed_by_other_ca:
      return "signed_by_other_ca";
    case staple_kind::revoked:
      return "revoked";
    case staple_kind::unknown:
      return "unknown";
    case staple_kind::other_serial:
      return "other_serial";
    case staple_kind::other_issuer:
      return "other_issuer";
    case staple_kind::expired:
      return "expired";
    case staple_kind::expired_within_skew:
      return "expired_within_skew";
    case staple_kind::not_yet_valid:
      return "not_yet_valid";
    case staple_kind::try_later:
      return "try_later";
    case staple_kind::successful_garbage_body:
      return "successful_garbage_body";
    case staple_kind::random_bytes:
      return "random_bytes";
  }
  return "?";
}

std::string make_staple(const tls::pki_paths& pki, const std::string& dir, staple_kind kind) {
  const std::string out = dir + "/staple-" + to_string(kind) + ".der";
  auto other_ca = [&] { return tls::make_pki(dir + "/other-" + to_string(kind), {}); };
  switch (kind) {
    case staple_kind::good:
      local_ocsp(pki.ocsp_index, pki.issuer, pki.issuer, pki.issuer, pki.issuer_key, out,
                 {"-cert", pki.leaf_cert});
      break;
    case staple_kind::good_no_certs:
      local_ocsp(pki.ocsp_index, pki.issuer, pki.issuer, pki.issuer, pki.issuer_key, out,
                 {"-cert", pki.leaf_cert, "-resp_no_certs"});
      break;
    case staple_kind::good_sha256_certid:
      local_ocsp(pki.ocsp_index, pki.issuer, pki.issuer, pki.issuer, pki.issuer_key, out,
                 {"-sha256", "-cert", pki.leaf_cert});
      break;
    case staple_kind::two_singles:
      local_ocsp(pki.ocsp_index, pki.issuer, pki.issuer, pki.issuer, pki.issuer_key, out,
                 {"-serial", "0x1234", "-cert", pki.leaf_cert});
      break;
    case staple_kind::delegated: {
      auto [crt, key] = issue(
          dir, "responder", pki.issuer, pki.issuer_key,
          "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=OCSPSigning\n");
      local_ocsp(pki.ocsp_index, pki.issuer, pki.issuer, crt, key, out, {"-cert", pki.leaf_cert});
      break;
    }
    case staple_kind::delegated_without_eku: {
      auto [crt, key] = issue(
          dir, "no-eku", pki.issuer, pki.issuer_key,
          "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n");
      local_ocsp(pki.ocsp_index, pki.issuer, pki.issuer, crt, key, out, {"-cert", pki.leaf_cert});
      break;
    }
    case staple_kind::delegated_by_other_ca: {
      auto other = other_ca();
      auto [crt, key] = issue(
          dir, "foreign-responder", other.issuer, other.issuer_key,
          "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=OCSPSigning\n");
      local_ocsp(pki.ocsp_index, pki.issuer, pki.issuer, crt, key, out, {"-cert", pki.leaf_cert});
      break;
    }
    case staple_kind::signed_by_other_ca: {
      auto other = other_ca();
      local_ocsp(pki.ocsp_index, pki.issuer, pki.issuer, other.issuer, other.issuer_key, out,
                 {"-cert", pki.leaf_cert});
      break;
    }
    case staple_kind::revoked: {
      // index.txt: V <expiry> <empty> <serial> ... -> R <expiry> <revoked at>,keyCompromise ...
      std::string line = read_file(pki.ocsp_index);
      const auto t2 = line.find('\t', line.find('\t') + 1);
      char when[32];
      const std::time_t at = std::time(nullptr) - 3600;
      std::tm tm{};
      gmtime_r(&at, &tm);
      std::strftime(when, sizeof when, "%y%m%d%H%M%SZ", &tm);
      line = "R" + line.substr(1, t2) + when + ",keyCompromise" + line.substr(t2 + 1);
      const std::string index = dir + "/index-revoked.txt";
      write_bytes(index, line);
      local_ocsp(index, pki.issuer, pki.issuer, pki.issuer, pki.issuer_key, out,
                 {"-cert", pki.leaf_cert});
      break;
    }
    case staple_kind::unknown: {
      const std::string index = dir + "/index-empty.txt";
      write_bytes(index, "");
      local_ocsp(index, pki.issuer, pki.issuer, pki.issuer, pki.issuer_key, out,
                 {"-cert", pki.leaf_cert});
      break;
    }
    case staple_kind::other_serial:
      local_ocsp(pki.ocsp_index, pki.issuer, pki.issuer, pki.issuer, pki.issuer_key, out,
                 {"-serial", "0x1234"});
      break;
    case staple_kind::other_issuer: {
      auto other = other_ca();
      tls::write_ocsp_response(other, out, 86400);
      break;
    }
    case staple_kind::expired:
      write_bytes(out, good_at(pki, -7200, -3600));
      break;
    case staple_kind::expired_within_skew:
      write_bytes(out, good_at(pki, -7200, -60));
      break;
    case staple_kind::not_yet_valid:
      write_bytes(out, good_at(pki, 3600, 7200));
      break;
    case staple_kind::try_later: {
      tls::ocsp_response_ptr resp(OCSP_response_create(OCSP_RESPONSE_STATUS_TRYLATER, nullptr));
      if (!resp) throw std::runtime_error("OCSP_response_create failed");
      write_bytes(out, der_of(resp.get()));
      break;
    }
    case staple_kind::successful_garbage_body: {
      // OCSPResponse { successful, [0] { id-pkix-ocsp-basic, OCTET STRING <junk> } }
      const std::string basic_oid("\x06\x09\x2b\x06\x01\x05\x05\x07\x30\x01\x01", 11);
      const std::string status("\x0a\x01\x00", 3);
      const std::string bytes = tlv(0x04, random_bytes(200));
      write_bytes(out, tlv(0x30, status + tlv(0xa0, tlv(0x30, basic_oid + bytes))));
      break;
    }
    case staple_kind::random_bytes:
      write_bytes(out, random_bytes(3000));
      break;
  }
  return out;
}

staple_server::staple_server(int port, const std::string& chain, const std::string& key,
                             std::vector<std::string> staples)
    : staples_(std::move(staples)) {
  if (staples_.empty()) throw std::runtime_error("staple_server: no staple to serve");
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  ctx_ = ctx;
  if (ctx == nullptr || SSL_CTX_use_certificate_chain_file(ctx, chain.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    SSL_CTX_free(ctx);
    throw std::runtime_error("staple_server: cannot load " + chain + " / " + key);
  }
  // Never resumes (session IDs issued, never found; no tickets): every handshake is a full one
  // and carries a staple.
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER | SSL_SESS_CACHE_NO_INTERNAL);
  SSL_CTX_set_tlsext_status_arg(ctx, this);
  SSL_CTX_set_tlsext_status_cb(
      ctx, +[](SSL* s, void* arg) -> int {
        auto* self = static_cast<staple_server*>(arg);
        const std::string& staple = self->staples_[self->next_++ % self->staples_.size()];
        auto* copy = static_cast<unsigned char*>(OPENSSL_malloc(staple.size()));
        if (copy == nullptr) return SSL_TLSEXT_ERR_NOACK;
        std::memcpy(copy, staple.data(), staple.size());
        SSL_set_tlsext_status_ocsp_resp(s, copy, static_cast<long>(staple.size()));
        return SSL_TLSEXT_ERR_OK;
      });
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(fd_, 64) != 0) {
    if (fd_ >= 0) ::close(fd_);
    SSL_CTX_free(ctx);
    throw std::runtime_error("staple_server: cannot listen on port " + std::to_string(port));
  }
  thread_ = std::thread([this] { serve(); });
}

staple_server::~staple_server() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
  SSL_CTX_free(static_cast<SSL_CTX*>(ctx_));
}

void staple_server::serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) continue;
    timeval tv{2, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    SSL* s = SSL_new(static_cast<SSL_CTX*>(ctx_));
    SSL_set_fd(s, c);
    if (SSL_accept(s) == 1) SSL_shutdown(s);
    SSL_free(s);
    ERR_clear_error();
    ::close(c);
  }
}

}  // namespace ngxtls::test
