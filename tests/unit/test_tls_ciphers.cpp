#include <doctest/doctest.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "support/process.hpp"
#include "tls/ciphers.hpp"

namespace tls = ngxtls::tls;

namespace {

const tls::cipher_info* find(const std::vector<tls::cipher_info>& v, const std::string& name) {
  auto it = std::find_if(v.begin(), v.end(), [&](const auto& c) { return c.name == name; });
  return it == v.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("nginx's default cipher string HIGH:!aNULL:!MD5 has no anonymous or MD5 cipher") {
  auto list = tls::expand_cipher_string("HIGH:!aNULL:!MD5");
  REQUIRE_FALSE(list.empty());
  for (const auto& c : list) {
    INFO(c.name);
    CHECK(c.auth != "None");
    CHECK(c.mac != "MD5");
    CHECK(c.protocol != "TLSv1.3");
    CHECK(c.bits >= 128);
    CHECK_FALSE(c.kx.empty());
    CHECK_FALSE(c.enc.empty());
  }
  const auto* gcm = find(list, "ECDHE-ECDSA-AES256-GCM-SHA384");
  REQUIRE(gcm != nullptr);
  CHECK(gcm->iana_name == "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384");
  CHECK(gcm->protocol == "TLSv1.2");
  CHECK(gcm->kx == "ECDH");
  CHECK(gcm->auth == "ECDSA");
  CHECK(gcm->enc == "AESGCM(256)");
  CHECK(gcm->mac == "AEAD");
  CHECK(gcm->bits == 256);
  CHECK(gcm->aead);
  CHECK(gcm->id == 0xC02C);
  const auto* cbc = find(list, "AES256-SHA");
  REQUIRE(cbc != nullptr);
  CHECK_FALSE(cbc->aead);
  CHECK(cbc->mac == "SHA1");
}

TEST_CASE("cipher expansion agrees with the openssl ciphers command") {
  auto r = ngxtls::test::run({"openssl", "ciphers", "HIGH:!aNULL:!MD5"});
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> cli;
  std::stringstream in(r.out.substr(0, r.out.find_last_not_of("\n") + 1));
  std::string name;
  while (std::getline(in, name, ':'))
    if (name.rfind("TLS_", 0) != 0) cli.push_back(name);  // the TLS 1.3 suites are separate
  std::vector<std::string> ours;
  for (const auto& c : tls::expand_cipher_string("HIGH:!aNULL:!MD5")) ours.push_back(c.name);
  CHECK(ours == cli);
}

TEST_CASE("NULL and eNULL expand to ciphers without encryption") {
  for (const char* spec : {"NULL", "eNULL"}) {
    INFO(spec);
    auto list = tls::expand_cipher_string(spec);
    REQUIRE_FALSE(list.empty());
    for (const auto& c : list) {
      INFO(c.name);
      CHECK(c.enc == "None");
      CHECK(c.bits == 0);
    }
    CHECK(find(list, "NULL-SHA256") != nullptr);
  }
}

TEST_CASE("a cipher string that matches nothing throws invalid_argument") {
  CHECK_THROWS_AS(tls::expand_cipher_string("NO-SUCH-CIPHER"), std::invalid_argument);
  CHECK_THROWS_AS(tls::expand_cipher_string("!ALL"), std::invalid_argument);
  // TLS 1.3 names are not TLS 1.2 ciphers.
  CHECK_THROWS_AS(tls::expand_cipher_string("TLS_AES_128_GCM_SHA256"), std::invalid_argument);
}

TEST_CASE("TLS 1.3 suites are expanded separately") {
  auto def = tls::expand_tls13_ciphersuites();
  REQUIRE_FALSE(def.empty());
  CHECK(find(def, "TLS_AES_256_GCM_SHA384") != nullptr);
  for (const auto& c : def) {
    CHECK(c.protocol == "TLSv1.3");
    CHECK(c.aead);
  }
  auto one = tls::expand_tls13_ciphersuites("TLS_CHACHA20_POLY1305_SHA256");
  REQUIRE(one.size() == 1);
  CHECK(one[0].id == 0x1303);
  CHECK_THROWS_AS(tls::expand_tls13_ciphersuites("ECDHE-RSA-AES128-GCM-SHA256"),
                  std::invalid_argument);
}

TEST_CASE("openssl_version is the short version of the libssl in use") {
  auto v = tls::openssl_version();
  CHECK(std::regex_match(v, std::regex(R"(3\.\d+\.\d+)")));
  auto r = ngxtls::test::run({"openssl", "version"});
  // The CLI names the library version it runs with, e.g. "(Library: OpenSSL 3.0.19 ...)".
  CHECK(r.out.find(v) != std::string::npos);
}
