#include "tls/ocsp.hpp"

#include <openssl/pem.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "tls/file_read.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::tls {
namespace {

std::int64_t to_unix(const ASN1_GENERALIZEDTIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return static_cast<std::int64_t>(timegm(&tm));
}

void fill_single(ocsp_response_info& info, int status, const ASN1_GENERALIZEDTIME* rev,
                 const ASN1_GENERALIZEDTIME* this_update, const ASN1_GENERALIZEDTIME* next_update) {
  info.cert_status = OCSP_cert_status_str(status);
  info.this_update_unix = to_unix(this_update);
  info.next_update_unix = to_unix(next_update);
  if (status == V_OCSP_CERTSTATUS_REVOKED) info.revocation_time_unix = to_unix(rev);
}

std::vector<x509_ptr> read_pems(const std::string& path) {
  const std::string pem = read_file_bounded(path);  // never blocks on a FIFO or device
  bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) throw openssl_error("BIO_new_mem_buf");
  std::vector<x509_ptr> out;
  while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.emplace_back(c);
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
  int status = -1, reason = -1;
  ASN1_GENERALIZEDTIME *rev = nullptr, *this_update = nullptr, *next_update = nullptr;
  if (leaf != nullptr && issuer != nullptr) {
    ocsp_certid_ptr id(OCSP_cert_to_id(EVP_sha1(), leaf, issuer));
    if (!id) throw_openssl("OCSP_cert_to_id");
    if (OCSP_resp_find_status(basic.get(), id.get(), &status, &reason, &rev, &this_update,
                              &next_update) == 1)
      fill_single(info, status, rev, this_update, next_update);
  } else if (info.single_responses > 0) {
    OCSP_SINGLERESP* single = OCSP_resp_get0(basic.get(), 0);
    status = OCSP_single_get0_status(single, &reason, &rev, &this_update, &next_update);
    if (status >= 0) fill_single(info, status, rev, this_update, next_update);
  }
  ERR_clear_error();
  return info;
}

ocsp_response_info read_ocsp_response_file(const std::string& der_path,
                                           const std::string& chain_path,
                                           const std::string& issuer_path) {
  const std::string der = read_file_bounded(der_path);  // never blocks on a FIFO or device

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
