#include "tls/ocsp.hpp"

#include <openssl/pem.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "tls/openssl_ptr.hpp"

namespace ngxtls::tls {
namespace {

std::int64_t to_unix(const ASN1_GENERALIZEDTIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return static_cast<std::int64_t>(timegm(&tm));
}

void fill_single(ocsp_response_info& info, int status, int reason, const ASN1_GENERALIZEDTIME* rev,
                 const ASN1_GENERALIZEDTIME* this_update, const ASN1_GENERALIZEDTIME* next_update) {
  info.cert_status = OCSP_cert_status_str(status);
  info.this_update_unix = to_unix(this_update);
  info.next_update_unix = to_unix(next_update);
  if (status == V_OCSP_CERTSTATUS_REVOKED) {
    info.revocation_time_unix = to_unix(rev);
    if (reason >= 0) info.revocation_reason = OCSP_crl_reason_str(reason);
  }
}

// "2026-12-01 10:50:00 UTC"
std::string utc(std::int64_t unix_s) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string serial_hex(const ASN1_INTEGER* serial) {
  bignum_ptr bn(ASN1_INTEGER_to_BN(serial, nullptr));
  if (!bn) return "?";
  char* hex = BN_bn2hex(bn.get());
  std::string out = hex != nullptr ? hex : "?";
  OPENSSL_free(hex);
  return out;
}

// Whether `digest` of length `n` equals the octet string `want`.
bool same_bytes(const unsigned char* digest, unsigned n, const ASN1_OCTET_STRING* want) {
  return want != nullptr && ASN1_STRING_length(want) == static_cast<int>(n) &&
         std::memcmp(ASN1_STRING_get0_data(want), digest, n) == 0;
}

// The index of the SingleResponse whose CertID names `leaf`, or -1. With `issuer`, the
// CertID is built by OCSP_cert_to_id in each hash the response uses (SHA-1 from nginx and
// OpenSSL clients; others may use SHA-256) and found with OCSP_resp_find; without it, only the
// serial and the issuer name hash can be compared (the key hash needs the issuer's key).
int find_single(OCSP_BASICRESP* basic, X509* leaf, X509* issuer) {
  const int n = OCSP_resp_count(basic);
  for (int i = 0; i < n; ++i) {
    const OCSP_CERTID* cid = OCSP_SINGLERESP_get0_id(OCSP_resp_get0(basic, i));
    ASN1_OCTET_STRING *name_hash = nullptr, *key_hash = nullptr;
    ASN1_OBJECT* alg = nullptr;
    ASN1_INTEGER* serial = nullptr;
    if (cid == nullptr ||
        OCSP_id_get0_info(&name_hash, &alg, &key_hash, &serial, const_cast<OCSP_CERTID*>(cid)) != 1)
      continue;
    const EVP_MD* md = alg != nullptr ? EVP_get_digestbyobj(alg) : nullptr;
    if (md == nullptr) continue;
    if (issuer != nullptr) {
      ocsp_certid_ptr id(OCSP_cert_to_id(md, leaf, issuer));
      if (!id) continue;
      const int at = OCSP_resp_find(basic, id.get(), -1);
      if (at >= 0) return at;
      continue;
    }
    if (serial == nullptr || ASN1_INTEGER_cmp(serial, X509_get0_serialNumber(leaf)) != 0) continue;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (X509_NAME_digest(X509_get_issuer_name(leaf), md, digest, &len) == 1 &&
        same_bytes(digest, len, name_hash))
      return i;
  }
  ERR_clear_error();
  return -1;
}

// The certificate of `chain` that issued `leaf`: names match (X509_check_issued) and its key
// verifies the leaf's signature. Null when the chain lacks it.
X509* find_issuer(X509* leaf, const std::vector<X509*>& chain) {
  for (X509* c : chain) {
    if (c == nullptr || c == leaf || X509_check_issued(c, leaf) != X509_V_OK) continue;
    EVP_PKEY* key = X509_get0_pubkey(c);
    if (key != nullptr && X509_verify(leaf, key) == 1) return c;
  }
  ERR_clear_error();
  return nullptr;
}

std::vector<x509_ptr> read_pems(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    int e = errno;
    throw file_error(path, std::strerror(e), e);
  }
  std::vector<x509_ptr> out;
  while (X509* c = PEM_read_X509(f, nullptr, nullptr, nullptr)) out.emplace_back(c);
  std::fclose(f);
  ERR_clear_error();
  if (out.empty()) throw file_error(path, "no certificate found");
  return out;
}

}  // namespace

ocsp_response_info parse_ocsp_response(std::string_view der, X509* leaf, X509* issuer) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  ERR_clear_error();
  ocsp_response_ptr resp(d2i_OCSP_RESPONSE(nullptr, &p, static_cast<long>(der.size())));
  if (!resp) {
    ERR_clear_error();
    throw std::invalid_argument("not a DER OCSP response");
  }
  ocsp_response_info info;
  int rs = OCSP_response_status(resp.get());
  info.response_status = OCSP_response_status_str(rs);
  if (rs != OCSP_RESPONSE_STATUS_SUCCESSFUL) return info;
  ocsp_basicresp_ptr basic(OCSP_response_get1_basic(resp.get()));
  if (!basic) {
    ERR_clear_error();
    throw std::invalid_argument("OCSP response without a basic response");
  }
  info.single_responses = OCSP_resp_count(basic.get());
  const int at = leaf != nullptr && issuer != nullptr ? find_single(basic.get(), leaf, issuer)
                                                      : (info.single_responses > 0 ? 0 : -1);
  if (at >= 0) {
    int reason = -1;
    ASN1_GENERALIZEDTIME *rev = nullptr, *this_update = nullptr, *next_update = nullptr;
    const int status = OCSP_single_get0_status(OCSP_resp_get0(basic.get(), at), &reason, &rev,
                                               &this_update, &next_update);
    if (status >= 0) fill_single(info, status, reason, rev, this_update, next_update);
  }
  ERR_clear_error();
  return info;
}

std::string to_string(staple_verdict v) {
  switch (v) {
    case staple_verdict::valid:
      return "valid";
    case staple_verdict::garbage:
      return "garbage";
    case staple_verdict::not_successful:
      return "not_successful";
    case staple_verdict::malformed:
      return "malformed";
    case staple_verdict::other_certificate:
      return "other_certificate";
    case staple_verdict::unverifiable:
      return "unverifiable";
    case staple_verdict::revoked:
      return "revoked";
    case staple_verdict::unknown:
      return "unknown";
    case staple_verdict::expired:
      return "expired";
    case staple_verdict::not_yet_valid:
      return "not_yet_valid";
  }
  return "?";
}

staple_check check_ocsp_staple(std::string_view der, X509* leaf, const std::vector<X509*>& chain,
                               long skew_s) {
  staple_check out;
  auto fail = [&](staple_verdict v, std::string why) {
    out.verdict = v;
    out.reason = std::move(why);
    ERR_clear_error();
    return out;
  };
  ERR_clear_error();
  if (der.empty() || der.size() > static_cast<std::size_t>(std::numeric_limits<long>::max()))
    return fail(staple_verdict::garbage,
                "not a DER OCSP response (" + std::to_string(der.size()) + " bytes)");
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  ocsp_response_ptr resp(d2i_OCSP_RESPONSE(nullptr, &p, static_cast<long>(der.size())));
  if (!resp)
    return fail(staple_verdict::garbage,
                "not a DER OCSP response (" + std::to_string(der.size()) + " bytes)");
  const int rs = OCSP_response_status(resp.get());
  out.info.response_status = OCSP_response_status_str(rs);
  if (rs != OCSP_RESPONSE_STATUS_SUCCESSFUL)
    return fail(staple_verdict::not_successful, "responseStatus " + out.info.response_status +
                                                    " (" + std::to_string(rs) +
                                                    "), not successful");
  ocsp_basicresp_ptr basic(OCSP_response_get1_basic(resp.get()));
  if (!basic)
    return fail(staple_verdict::malformed,
                "responseStatus successful but no BasicOCSPResponse inside");
  out.info.single_responses = OCSP_resp_count(basic.get());
  if (leaf == nullptr)
    return fail(staple_verdict::unverifiable, "no server certificate to check it against");

  X509* issuer = find_issuer(leaf, chain);
  const int at = find_single(basic.get(), leaf, issuer);
  if (at < 0) {
    std::string why = "it answers for another certificate: ";
    if (out.info.single_responses == 0) {
      why += "it holds no SingleResponse";
    } else {
      const OCSP_CERTID* cid = OCSP_SINGLERESP_get0_id(OCSP_resp_get0(basic.get(), 0));
      ASN1_INTEGER* serial = nullptr;
      if (cid != nullptr)
        OCSP_id_get0_info(nullptr, nullptr, nullptr, &serial, const_cast<OCSP_CERTID*>(cid));
      why += "serial " + (serial != nullptr ? serial_hex(serial) : std::string("?"));
      if (out.info.single_responses > 1)
        why += " and " + std::to_string(out.info.single_responses - 1) + " more";
      why += ", not this certificate (serial " + serial_hex(X509_get0_serialNumber(leaf)) +
             (issuer != nullptr ? " from this issuer)" : ")");
    }
    return fail(staple_verdict::other_certificate, why);
  }
  int status = -1, reason = -1;
  ASN1_GENERALIZEDTIME *rev = nullptr, *this_update = nullptr, *next_update = nullptr;
  status = OCSP_single_get0_status(OCSP_resp_get0(basic.get(), at), &reason, &rev, &this_update,
                                   &next_update);
  if (status < 0)
    return fail(staple_verdict::malformed, "its SingleResponse has no certificate status");
  fill_single(out.info, status, reason, rev, this_update, next_update);

  if (issuer == nullptr)
    return fail(
        staple_verdict::unverifiable,
        "its signature could not be verified: the server's chain does not include the issuer of "
        "its certificate");
  // Only the issuer is trusted (PARTIAL_CHAIN: it is an intermediate, not a root). A response
  // signed by the issuer verifies as the chain [issuer]; one signed by a delegated responder
  // (a certificate from the response) as [responder, issuer], and OCSP_basic_verify then
  // demands the OCSP signing EKU of it. OCSP_NOEXPLICIT: no other trust path.
  ossl_ptr<X509_STORE, X509_STORE_free> store(X509_STORE_new());
  STACK_OF(X509)* certs = sk_X509_new_null();
  if (!store || certs == nullptr || X509_STORE_add_cert(store.get(), issuer) != 1 ||
      X509_STORE_set_flags(store.get(), X509_V_FLAG_PARTIAL_CHAIN) != 1 ||
      sk_X509_push(certs, issuer) <= 0) {
    sk_X509_free(certs);
    return fail(staple_verdict::unverifiable, "its signature could not be verified: out of memory");
  }
  const int ok = OCSP_basic_verify(basic.get(), certs, store.get(), OCSP_NOEXPLICIT);
  sk_X509_free(certs);
  if (ok != 1) {
    unsigned long e = ERR_peek_last_error();
    const char* r = e != 0 ? ERR_reason_error_string(e) : nullptr;
    return fail(
        staple_verdict::unverifiable,
        std::string("it is not signed by the certificate's issuer nor by a responder the issuer "
                    "delegated to (") +
            (r != nullptr ? r : "signature verification failed") + ")");
  }
  {
    // Signed by someone other than the issuer: a delegated responder, checked above.
    X509* signer = nullptr;
    STACK_OF(X509)* none = sk_X509_new_null();
    if (none != nullptr && OCSP_resp_get0_signer(basic.get(), &signer, none) == 1)
      out.delegated_responder = X509_cmp(signer, issuer) != 0;
    sk_X509_free(none);
    ERR_clear_error();
  }

  if (status == V_OCSP_CERTSTATUS_REVOKED) {
    std::string why = "the certificate is revoked";
    if (out.info.revocation_time_unix != 0) why += " since " + utc(out.info.revocation_time_unix);
    if (!out.info.revocation_reason.empty()) why += " (reason " + out.info.revocation_reason + ")";
    return fail(staple_verdict::revoked, why);
  }
  if (status != V_OCSP_CERTSTATUS_GOOD)
    return fail(staple_verdict::unknown,
                "the responder does not know the certificate (status unknown)");
  if (OCSP_check_validity(this_update, next_update, skew_s, -1) != 1) {
    const int r = ERR_GET_REASON(ERR_peek_last_error());
    const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
    if (r == OCSP_R_STATUS_EXPIRED)
      return fail(staple_verdict::expired,
                  "expired: nextUpdate " + utc(out.info.next_update_unix) + " passed " +
                      std::to_string(now - out.info.next_update_unix) + " s ago");
    if (r == OCSP_R_STATUS_NOT_YET_VALID)
      return fail(staple_verdict::not_yet_valid,
                  "not yet valid: thisUpdate " + utc(out.info.this_update_unix) + " is " +
                      std::to_string(out.info.this_update_unix - now) + " s in the future");
    return fail(staple_verdict::malformed, "its thisUpdate/nextUpdate are not a valid time window");
  }
  out.verdict = staple_verdict::valid;
  out.reason = std::string("good, signed by ") +
               (out.delegated_responder ? "a responder the issuer delegated to" : "the issuer") +
               (out.info.next_update_unix != 0 ? ", next update " + utc(out.info.next_update_unix)
                                               : ", no nextUpdate");
  ERR_clear_error();
  return out;
}

ocsp_response_info read_ocsp_response_file(const std::string& der_path,
                                           const std::string& chain_path,
                                           const std::string& issuer_path) {
  std::ifstream f(der_path, std::ios::binary);
  if (!f) {
    int e = errno;
    throw file_error(der_path, std::strerror(e), e);
  }
  std::ostringstream s;
  s << f.rdbuf();
  const std::string der = s.str();

  std::vector<x509_ptr> chain, issuers;
  if (!chain_path.empty()) chain = read_pems(chain_path);
  if (!issuer_path.empty()) issuers = read_pems(issuer_path);
  X509* leaf = chain.empty() ? nullptr : chain.front().get();
  X509* issuer = nullptr;
  if (leaf != nullptr) {
    for (std::size_t i = 1; i < chain.size() && issuer == nullptr; ++i)
      if (X509_check_issued(chain[i].get(), leaf) == X509_V_OK) issuer = chain[i].get();
    for (std::size_t i = 0; i < issuers.size() && issuer == nullptr; ++i)
      if (X509_check_issued(issuers[i].get(), leaf) == X509_V_OK) issuer = issuers[i].get();
  }
  try {
    return parse_ocsp_response(der, issuer != nullptr ? leaf : nullptr, issuer);
  } catch (const std::invalid_argument& e) {
    throw file_error(der_path, e.what());
  }
}

}  // namespace ngxtls::tls
