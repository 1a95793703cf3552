#include <doctest/doctest.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <ctime>

#include "support/ocsp_responder.hpp"
#include "support/ocsp_staples.hpp"
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

// check_ocsp_staple: one case per way a staple can be good or bad (tests/support/ocsp_staples).
namespace {

struct staple_fixture {
  temp_dir dir;
  tls::pki_paths pki;
  x509_ptr leaf, issuer;
  staple_fixture() {
    tls::pki_options opt;
    opt.ocsp_url = "http://127.0.0.1:9/";
    pki = tls::make_pki((dir.path() / "pki").string(), opt);
    leaf = load(pki.leaf_cert);
    issuer = load(pki.issuer);
  }
  static std::string serial_of(X509* c) {
    BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(c), nullptr);
    char* hex = BN_bn2hex(bn);
    std::string out = hex;
    OPENSSL_free(hex);
    BN_free(bn);
    return out;
  }
  // The staple of `kind`, checked with the chain the server sends (leaf, issuer).
  tls::staple_check check(ngxtls::test::staple_kind kind) {
    auto path = ngxtls::test::make_staple(pki, dir.path().string(), kind);
    return tls::check_ocsp_staple(ngxtls::test::read_file(path), leaf.get(),
                                  {leaf.get(), issuer.get()});
  }
};

}  // namespace

TEST_CASE("staple: a good response from openssl ocsp, signed by the issuer, is valid") {
  staple_fixture f;
  for (auto kind :
       {ngxtls::test::staple_kind::good, ngxtls::test::staple_kind::good_no_certs,
        ngxtls::test::staple_kind::good_sha256_certid, ngxtls::test::staple_kind::two_singles}) {
    INFO(ngxtls::test::to_string(kind));
    auto c = f.check(kind);
    CHECK(c.verdict == tls::staple_verdict::valid);
    CHECK_FALSE(c.delegated_responder);
    CHECK(c.reason.rfind("good, signed by the issuer, next update ", 0) == 0);
    CHECK(c.info.response_status == "successful");
    CHECK(c.info.cert_status == "good");
    CHECK(c.info.next_update_unix - c.info.this_update_unix == 86400);  // -ndays 1
    CHECK(c.info.single_responses == (kind == ngxtls::test::staple_kind::two_singles ? 2 : 1));
  }
}

TEST_CASE("staple: signed by a responder the issuer delegated to (OCSPSigning EKU) is valid") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::delegated);
  CHECK(c.verdict == tls::staple_verdict::valid);
  CHECK(c.delegated_responder);
  CHECK(c.reason.rfind("good, signed by a responder the issuer delegated to, next update ", 0) ==
        0);
}

TEST_CASE("staple: 3,000 random bytes are garbage") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::random_bytes);
  CHECK(c.verdict == tls::staple_verdict::garbage);
  CHECK(c.reason == "not a DER OCSP response (3000 bytes)");
  CHECK(tls::check_ocsp_staple("", f.leaf.get(), {}).verdict == tls::staple_verdict::garbage);
}

TEST_CASE("staple: successful with a body that is no BasicOCSPResponse is malformed") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::successful_garbage_body);
  CHECK(c.verdict == tls::staple_verdict::malformed);
  CHECK(c.reason == "responseStatus successful but no BasicOCSPResponse inside");
  CHECK(c.info.response_status == "successful");
}

TEST_CASE("staple: tryLater is not successful and names its responseStatus") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::try_later);
  CHECK(c.verdict == tls::staple_verdict::not_successful);
  CHECK(c.reason == "responseStatus trylater (3), not successful");
}

TEST_CASE("staple: revoked names the revocation time and reason") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::revoked);
  CHECK(c.verdict == tls::staple_verdict::revoked);
  CHECK(c.info.cert_status == "revoked");
  CHECK(c.info.revocation_reason == "keyCompromise");
  const std::int64_t ago =
      static_cast<std::int64_t>(std::time(nullptr)) - c.info.revocation_time_unix;
  CHECK(ago >= 3600);
  CHECK(ago < 3700);
  char when[40];
  std::time_t t = static_cast<std::time_t>(c.info.revocation_time_unix);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  CHECK(c.reason ==
        std::string("the certificate is revoked since ") + when + " (reason keyCompromise)");
}

TEST_CASE("staple: status unknown is not valid") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::unknown);
  CHECK(c.verdict == tls::staple_verdict::unknown);
  CHECK(c.reason == "the responder does not know the certificate (status unknown)");
}

TEST_CASE("staple: a response for another serial of the same issuer is for another certificate") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::other_serial);
  CHECK(c.verdict == tls::staple_verdict::other_certificate);
  CHECK(c.reason ==
        "it answers for another certificate: serial 1234, not this certificate (serial " +
            staple_fixture::serial_of(f.leaf.get()) + " from this issuer)");
  CHECK(c.info.cert_status.empty());
}

TEST_CASE("staple: a response for another CA's certificate is for another certificate") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::other_issuer);
  CHECK(c.verdict == tls::staple_verdict::other_certificate);
  auto other_leaf = load(f.dir.path().string() + "/other-other_issuer/leaf.crt");
  CHECK(c.reason == "it answers for another certificate: serial " +
                        staple_fixture::serial_of(other_leaf.get()) +
                        ", not this certificate (serial " +
                        staple_fixture::serial_of(f.leaf.get()) + " from this issuer)");
}

TEST_CASE("staple: signed by another CA is unverifiable") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::signed_by_other_ca);
  CHECK(c.verdict == tls::staple_verdict::unverifiable);
  // The other CA has the same subject as this issuer, so OpenSSL takes this issuer for the
  // signer and its key refutes the signature.
  CHECK(c.reason ==
        "it is not signed by the certificate's issuer nor by a responder the issuer delegated to "
        "(signature failure)");
  CHECK(c.info.cert_status == "good");  // what it claims, not believed
}

TEST_CASE("staple: a responder without the OCSPSigning EKU is not a delegated responder") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::delegated_without_eku);
  CHECK(c.verdict == tls::staple_verdict::unverifiable);
  CHECK(c.reason ==
        "it is not signed by the certificate's issuer nor by a responder the issuer delegated to "
        "(missing ocspsigning usage)");
}

TEST_CASE("staple: an OCSPSigning responder of another CA is not delegated by this issuer") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::delegated_by_other_ca);
  CHECK(c.verdict == tls::staple_verdict::unverifiable);
  CHECK(c.reason ==
        "it is not signed by the certificate's issuer nor by a responder the issuer delegated to "
        "(certificate verify error)");
}

TEST_CASE("staple: a chain without the issuer cannot verify even a good response") {
  staple_fixture f;
  auto path =
      ngxtls::test::make_staple(f.pki, f.dir.path().string(), ngxtls::test::staple_kind::good);
  auto c = tls::check_ocsp_staple(ngxtls::test::read_file(path), f.leaf.get(), {f.leaf.get()});
  CHECK(c.verdict == tls::staple_verdict::unverifiable);
  CHECK(c.reason ==
        "its signature could not be verified: the server's chain does not include the issuer of "
        "its certificate");
  CHECK(c.info.cert_status == "good");
  // A certificate with the issuer's name but another key is not the issuer either.
  auto other = tls::make_pki((f.dir.path() / "other").string());
  auto other_issuer = load(other.issuer);
  CHECK(tls::check_ocsp_staple(ngxtls::test::read_file(path), f.leaf.get(),
                               {f.leaf.get(), other_issuer.get()})
            .verdict == tls::staple_verdict::unverifiable);
}

TEST_CASE("staple: expired beyond the 5-minute skew; 60 s past nextUpdate is still valid") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::expired);
  CHECK(c.verdict == tls::staple_verdict::expired);
  CHECK(c.reason.rfind("expired: nextUpdate ", 0) == 0);
  const std::int64_t ago = static_cast<std::int64_t>(std::time(nullptr)) - c.info.next_update_unix;
  // "expired: nextUpdate <UTC> passed N s ago", N taken a moment before `ago`.
  const auto at = c.reason.find(" passed ");
  REQUIRE(at != std::string::npos);
  const std::int64_t said = std::stoll(c.reason.substr(at + 8));
  CHECK(c.reason.substr(c.reason.size() - 6) == " s ago");
  CHECK(said <= ago);
  CHECK(said >= ago - 5);
  CHECK(said >= 3600);
  CHECK(f.check(ngxtls::test::staple_kind::expired_within_skew).verdict ==
        tls::staple_verdict::valid);
}

TEST_CASE("staple: thisUpdate an hour ahead is not yet valid") {
  staple_fixture f;
  auto c = f.check(ngxtls::test::staple_kind::not_yet_valid);
  CHECK(c.verdict == tls::staple_verdict::not_yet_valid);
  CHECK(c.reason.rfind("not yet valid: thisUpdate ", 0) == 0);
  CHECK(c.reason.find(" s in the future") != std::string::npos);
}
