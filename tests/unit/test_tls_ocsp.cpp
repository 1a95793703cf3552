#include <doctest/doctest.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>

#include "support/ocsp_responder.hpp"
#include "support/process.hpp"
#include "tls/ocsp.hpp"
#include "tls/pki.hpp"

namespace tls = ngxtls::tls;
using ngxtls::test::temp_dir;

namespace {

struct x509_free_t {
  void operator()(X509* p) const { X509_free(p); }
};
using x509_ptr = std::unique_ptr<X509, x509_free_t>;

x509_ptr load(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  x509_ptr c(PEM_read_X509(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  REQUIRE(c);
  return c;
}

// Parses `der_path` back with OpenSSL and returns the leaf's status (V_OCSP_CERTSTATUS_*),
// after checking the response's signature against the PKI's root and its time window.
int parsed_status(const tls::pki_paths& pki, const std::string& der_path, long* validity_s) {
  std::string der = ngxtls::test::read_file(der_path);
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  std::unique_ptr<OCSP_RESPONSE, decltype(&OCSP_RESPONSE_free)> resp(
      d2i_OCSP_RESPONSE(nullptr, &p, static_cast<long>(der.size())), OCSP_RESPONSE_free);
  REQUIRE(resp);
  CHECK(OCSP_response_status(resp.get()) == OCSP_RESPONSE_STATUS_SUCCESSFUL);
  std::unique_ptr<OCSP_BASICRESP, decltype(&OCSP_BASICRESP_free)> basic(
      OCSP_response_get1_basic(resp.get()), OCSP_BASICRESP_free);
  REQUIRE(basic);
  auto leaf = load(pki.leaf_cert);
  auto issuer = load(pki.issuer);
  auto root = load(pki.root_cert);
  std::unique_ptr<OCSP_CERTID, decltype(&OCSP_CERTID_free)> id(
      OCSP_cert_to_id(EVP_sha1(), leaf.get(), issuer.get()), OCSP_CERTID_free);
  int status = -1, reason = -1;
  ASN1_GENERALIZEDTIME *rev = nullptr, *thisupd = nullptr, *nextupd = nullptr;
  REQUIRE(OCSP_resp_find_status(basic.get(), id.get(), &status, &reason, &rev, &thisupd,
                                &nextupd) == 1);
  REQUIRE(nextupd != nullptr);
  CHECK(OCSP_check_validity(thisupd, nextupd, 300, -1) == 1);
  int days = 0, secs = 0;
  REQUIRE(ASN1_TIME_diff(&days, &secs, thisupd, nextupd) == 1);
  *validity_s = days * 86400L + secs;

  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
  X509_STORE_add_cert(store.get(), root.get());
  STACK_OF(X509)* untrusted = sk_X509_new_null();
  sk_X509_push(untrusted, issuer.get());
  CHECK(OCSP_basic_verify(basic.get(), untrusted, store.get(), 0) == 1);
  sk_X509_free(untrusted);
  return status;
}

}  // namespace

TEST_CASE("a generated OCSP response parses back as good, signed by the leaf's issuer") {
  temp_dir dir;
  tls::pki_options opt;
  opt.ocsp_url = "http://127.0.0.1:9/";
  auto pki = tls::make_pki(dir.path().string(), opt);
  const std::string der = (dir.path() / "leaf.ocsp").string();
  tls::write_ocsp_response(pki, der, 3600);
  long validity = 0;
  CHECK(parsed_status(pki, der, &validity) == V_OCSP_CERTSTATUS_GOOD);
  CHECK(validity == 3600);
}

TEST_CASE("a revoked OCSP response parses back as revoked") {
  temp_dir dir;
  tls::pki_options opt;
  opt.intermediate = false;
  auto pki = tls::make_pki(dir.path().string(), opt);
  const std::string der = (dir.path() / "leaf.ocsp").string();
  tls::write_ocsp_response(pki, der, 86400, tls::ocsp_cert_status::revoked);
  long validity = 0;
  CHECK(parsed_status(pki, der, &validity) == V_OCSP_CERTSTATUS_REVOKED);
  CHECK(validity == 86400);
}

TEST_CASE("a self-signed PKI has no issuer to sign OCSP responses") {
  temp_dir dir;
  tls::pki_options opt;
  opt.self_signed = true;
  auto pki = tls::make_pki(dir.path().string(), opt);
  CHECK_THROWS_AS(tls::write_ocsp_response(pki, (dir.path() / "x.der").string()),
                  std::invalid_argument);
}

TEST_CASE("the local OCSP responder answers good for the generated leaf") {
  temp_dir dir;
  const int port = ngxtls::test::free_port();
  tls::pki_options opt;
  opt.ocsp_url = ngxtls::test::ocsp_responder::url_for(port);
  auto pki = tls::make_pki(dir.path().string(), opt);
  ngxtls::test::ocsp_responder responder(pki, port);
  CHECK(responder.url() == *opt.ocsp_url);
  auto r = ngxtls::test::run({"openssl", "ocsp", "-issuer", pki.issuer, "-cert", pki.leaf_cert,
                              "-url", responder.url(), "-CAfile", pki.root_cert, "-timeout", "10"},
                             "", 30);
  INFO(r.out, r.err, responder.log());
  CHECK(r.exit_code == 0);
  CHECK(r.out.find(pki.leaf_cert + ": good") != std::string::npos);
  CHECK(r.err.find("Response verify OK") != std::string::npos);
}

TEST_CASE("parse_ocsp_response reads status and update times of a generated response") {
  temp_dir dir;
  auto pki = tls::make_pki(dir.path().string());
  const std::string der = (dir.path() / "leaf.ocsp").string();
  tls::write_ocsp_response(pki, der, 7200);
  auto info = tls::read_ocsp_response_file(der, pki.chain);
  CHECK(info.response_status == "successful");
  CHECK(info.cert_status == "good");
  CHECK(info.single_responses == 1);
  CHECK(info.next_update_unix - info.this_update_unix == 7200);
  CHECK(info.revocation_time_unix == 0);
  // Leaf-only chain plus an issuer file finds the same response; no chain takes the first.
  CHECK(tls::read_ocsp_response_file(der, pki.leaf_cert, pki.issuer).cert_status == "good");
  CHECK(tls::read_ocsp_response_file(der).cert_status == "good");
  // A response for another PKI's leaf has no SingleResponse for this one.
  auto other = tls::make_pki((dir.path() / "other").string());
  CHECK(tls::read_ocsp_response_file(der, other.chain).cert_status.empty());

  tls::write_ocsp_response(pki, der, 60, tls::ocsp_cert_status::revoked);
  auto revoked = tls::read_ocsp_response_file(der, pki.chain);
  CHECK(revoked.cert_status == "revoked");
  CHECK(revoked.revocation_time_unix > 0);
  CHECK(revoked.revocation_time_unix < revoked.this_update_unix);

  auto junk = dir.write("junk.der", "not der");
  CHECK_THROWS_AS(tls::read_ocsp_response_file(junk.string()), tls::file_error);
  CHECK_THROWS_AS(tls::parse_ocsp_response("junk"), std::invalid_argument);
  CHECK_THROWS_AS(tls::read_ocsp_response_file((dir.path() / "none").string()), tls::file_error);
}

TEST_CASE("a non-successful OCSP response reports its response status only") {
  // OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED tryLater(3) }
  const std::string try_later("\x30\x03\x0a\x01\x03", 5);
  auto info = tls::parse_ocsp_response(try_later);
  CHECK(info.response_status == "trylater");
  CHECK(info.cert_status.empty());
}
