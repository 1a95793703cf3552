// engine::file_facts: the cache rules read certificate and key files through. After prefetch()
// every answer comes from what was decoded then (the files may be gone), and each answer is
// the one src/tls gives for the same paths.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/file_facts.hpp"
#include "support/process.hpp"
#include "tls/certificate.hpp"
#include "tls/pki.hpp"

namespace tls = ngxtls::tls;
namespace engine = ngxtls::engine;
using ngxtls::test::temp_dir;

namespace {

// What tls::key_matches_certificate says of a pair, in the form of a file_facts lookup.
engine::lookup<std::optional<std::string>> direct_key_match(const std::string& cert,
                                                            const std::string& key) {
  engine::lookup<std::optional<std::string>> l;
  try {
    l.facts = tls::key_matches_certificate(cert, key);
  } catch (const tls::file_error& e) {
    l.missing = e.missing();
    l.error = e.reason();
  }
  return l;
}

// The pair was read and the key belongs to the certificate.
bool matched(const engine::lookup<std::optional<std::string>>& l) {
  return l.facts && !*l.facts;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("after prefetch, certificate and key_match answer as src/tls does, from memory") {
  temp_dir dir;
  const auto ec = tls::make_pki((dir.path() / "ec").string());
  tls::pki_options ro;
  ro.key_type = "rsa";
  const auto rsa = tls::make_pki((dir.path() / "rsa").string(), ro);
  // `openssl ecparam -genkey` writes the curve's parameters before the key: nginx reads the
  // key after them.
  const std::string with_params = (dir.path() / "with-params.key").string();
  std::ofstream(with_params) << "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n"
                                "-----END EC PARAMETERS-----\n"
                             << read_text(ec.leaf_key);
  const std::string encrypted = (dir.path() / "encrypted.key").string();
  REQUIRE(ngxtls::test::run({"openssl", "pkey", "-in", ec.leaf_key, "-aes256", "-passout",
                             "pass:secret", "-out", encrypted})
              .exit_code == 0);
  const std::string garbage = (dir.path() / "garbage.key").string();
  std::ofstream(garbage) << "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
  const std::string missing = (dir.path() / "none.pem").string();

  const std::vector<std::string> certs = {ec.chain, ec.leaf_cert, rsa.chain, ec.leaf_key, missing};
  const std::vector<std::string> keys = {ec.leaf_key, rsa.leaf_key, with_params, encrypted,
                                         garbage,     ec.leaf_cert, missing};
  // Every answer before the files go away.
  std::vector<engine::lookup<std::optional<std::string>>> expected;
  std::vector<std::optional<std::vector<tls::certificate_info>>> chains;
  for (const auto& c : certs) {
    for (const auto& k : keys) expected.push_back(direct_key_match(c, k));
    try {
      chains.emplace_back(tls::read_certificate_chain(c));
    } catch (const tls::file_error&) {
      chains.emplace_back();
    }
  }
  CHECK(matched(expected[0]));  // ec chain, its key
  CHECK(matched(expected[2]));  // parameters before the key
  REQUIRE(expected[1].facts);
  CHECK(**expected[1].facts == "private key does not match the certificate");
  REQUIRE(expected[3].facts);
  CHECK(**expected[3].facts == "private key is encrypted (nginx needs ssl_password_file)");
  REQUIRE(expected[4].facts);
  CHECK(**expected[4].facts == "private key is malformed or of an unsupported type");
  CHECK(expected[5].error == "no private key found");
  CHECK(expected[6].missing);

  engine::file_facts facts;
  facts.prefetch(certs, keys, 4);
  std::filesystem::remove_all(dir.path() / "ec");
  std::filesystem::remove_all(dir.path() / "rsa");
  for (const auto& f : {with_params, encrypted, garbage}) std::filesystem::remove(f);

  std::size_t i = 0;
  for (std::size_t c = 0; c < certs.size(); ++c) {
    const auto& chain = facts.certificate(certs[c]);
    CHECK(chain.facts.has_value() == chains[c].has_value());
    if (chain.facts && chains[c]) {
      REQUIRE(chain.facts->size() == chains[c]->size());
      CHECK(chain.facts->front().sha256_hex == chains[c]->front().sha256_hex);
    }
    for (const auto& k : keys) {
      CAPTURE(certs[c]);
      CAPTURE(k);
      const auto& got = facts.key_match(certs[c], k);
      const auto& want = expected[i++];
      CHECK(got.facts == want.facts);
      CHECK(got.missing == want.missing);
      CHECK(got.error == want.error);
    }
  }
}

TEST_CASE("lookups of one file from many threads decode it once and agree") {
  temp_dir dir;
  const auto ec = tls::make_pki((dir.path() / "ec").string());
  engine::file_facts facts;
  std::vector<std::string> certs(64, ec.chain), keys(64, ec.leaf_key);
  facts.prefetch(certs, keys, 4);
  const auto* first = &facts.certificate(ec.chain);
  std::filesystem::remove_all(dir.path() / "ec");
  CHECK(&facts.certificate(ec.chain) == first);
  REQUIRE(first->facts);
  CHECK(matched(facts.key_match(ec.chain, ec.leaf_key)));
}
