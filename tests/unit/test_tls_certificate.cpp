#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "support/process.hpp"
#include "tls/certificate.hpp"
#include "tls/pki.hpp"

namespace tls = ngxtls::tls;
using ngxtls::test::temp_dir;

namespace {

std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

unsigned mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<unsigned>(st.st_mode) & 07777u;
}

// `openssl x509 -fingerprint -sha256` as lowercase hex without colons.
std::string cli_fingerprint(const std::string& cert) {
  auto r = ngxtls::test::run({"openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", cert});
  REQUIRE(r.exit_code == 0);
  std::string hex;
  auto eq = r.out.find('=');
  for (char c : r.out.substr(eq + 1))
    if (std::isxdigit(static_cast<unsigned char>(c))) hex += static_cast<char>(std::tolower(c));
  return hex;
}

}  // namespace

TEST_CASE("an EC P-256 chain with an OCSP URL reads back leaf first with every fact") {
  temp_dir dir;
  tls::pki_options opt;
  opt.dns_names = {"localhost", "a.example.test"};
  opt.ocsp_url = "http://127.0.0.1:8889/";
  opt.days = 90;
  auto paths = tls::make_pki(dir.path().string(), opt);
  auto chain = tls::read_certificate_chain(paths.chain);
  REQUIRE(chain.size() == 2);
  const auto& leaf = chain[0];
  CHECK(leaf.subject == "CN=localhost");
  CHECK(leaf.issuer == "CN=ngxtls test intermediate CA,O=ngxtls test");
  CHECK(leaf.key_type == "EC");
  CHECK(leaf.key_bits == 256);
  CHECK(leaf.curve == "prime256v1");
  CHECK(leaf.ocsp_urls == std::vector<std::string>{"http://127.0.0.1:8889/"});
  CHECK(leaf.dns_names == std::vector<std::string>{"localhost", "a.example.test"});
  CHECK_FALSE(leaf.self_signed);
  CHECK_FALSE(leaf.is_ca);
  const auto now = now_unix();
  CHECK(leaf.not_before_unix <= now);
  CHECK(leaf.not_before_unix >= now - 120);
  CHECK(leaf.not_after_unix >= now + 90 * 86400 - 60);
  CHECK(leaf.not_after_unix <= now + 90 * 86400 + 60);
  CHECK(leaf.sha256_hex == cli_fingerprint(paths.leaf_cert));
  CHECK(leaf.sha256_hex.size() == 64);
  CHECK_FALSE(leaf.serial_hex.empty());

  const auto& inter = chain[1];
  CHECK(inter.subject == "CN=ngxtls test intermediate CA,O=ngxtls test");
  CHECK(inter.issuer == "CN=ngxtls test root CA,O=ngxtls test");
  CHECK(inter.is_ca);
  CHECK_FALSE(inter.self_signed);
  CHECK(inter.ocsp_urls.empty());

  auto root = tls::read_certificate_chain(paths.root_cert);
  REQUIRE(root.size() == 1);
  CHECK(root[0].self_signed);
  CHECK(root[0].is_ca);
}

TEST_CASE("an RSA leaf without an OCSP URL reports RSA bits and no URL") {
  temp_dir dir;
  tls::pki_options opt;
  opt.key_type = "rsa";
  opt.rsa_bits = 3072;
  opt.intermediate = false;
  auto paths = tls::make_pki(dir.path().string(), opt);
  auto chain = tls::read_certificate_chain(paths.leaf_cert);
  REQUIRE(chain.size() == 1);
  CHECK(chain[0].key_type == "RSA");
  CHECK(chain[0].key_bits == 3072);
  CHECK(chain[0].curve.empty());
  CHECK(chain[0].ocsp_urls.empty());
  CHECK(chain[0].issuer == "CN=ngxtls test root CA,O=ngxtls test");
  CHECK(paths.intermediate_cert.empty());
  // Without an intermediate the chain file is the leaf alone.
  CHECK(tls::read_certificate_chain(paths.chain).size() == 1);
}

TEST_CASE("secp384r1 and Ed25519 leaves report their curve and type") {
  temp_dir dir;
  tls::pki_options opt;
  opt.curve = "secp384r1";
  auto p384 = tls::make_pki((dir.path() / "p384").string(), opt);
  auto leaf = tls::read_certificate_chain(p384.leaf_cert).at(0);
  CHECK(leaf.key_type == "EC");
  CHECK(leaf.key_bits == 384);
  CHECK(leaf.curve == "secp384r1");

  opt.key_type = "ed25519";
  auto ed = tls::make_pki((dir.path() / "ed").string(), opt);
  auto edleaf = tls::read_certificate_chain(ed.leaf_cert).at(0);
  CHECK(edleaf.key_type == "Ed25519");
  CHECK(edleaf.key_bits == 256);  // EVP_PKEY_get_bits for Ed25519
  CHECK(edleaf.curve.empty());
}

TEST_CASE("unknown key types and curves are rejected") {
  temp_dir dir;
  tls::pki_options opt;
  opt.key_type = "dsa";
  CHECK_THROWS_AS(tls::make_pki(dir.path().string(), opt), std::invalid_argument);
  opt.key_type = "ec";
  opt.curve = "no-such-curve";
  CHECK_THROWS_AS(tls::make_pki(dir.path().string(), opt), std::invalid_argument);
}

TEST_CASE("expired and expiring leaves carry the requested notAfter") {
  temp_dir dir;
  tls::pki_options opt;
  opt.not_after_offset_s = -86400;
  auto expired = tls::make_pki((dir.path() / "expired").string(), opt);
  auto leaf = tls::read_certificate_chain(expired.leaf_cert).at(0);
  const auto now = now_unix();
  CHECK(leaf.not_after_unix < now);
  CHECK(leaf.not_after_unix >= now - 86400 - 60);
  CHECK(leaf.not_before_unix < leaf.not_after_unix);
  // The CAs stay valid so that only the leaf is expired.
  CHECK(tls::read_certificate_chain(expired.root_cert).at(0).not_after_unix > now);

  opt.not_after_offset_s = 5 * 86400;
  auto expiring = tls::make_pki((dir.path() / "expiring").string(), opt);
  auto soon = tls::read_certificate_chain(expiring.leaf_cert).at(0);
  CHECK(soon.not_after_unix > now + 5 * 86400 - 60);
  CHECK(soon.not_after_unix < now + 5 * 86400 + 60);
}

TEST_CASE("a self-signed leaf is its own issuer and has no issuer files") {
  temp_dir dir;
  tls::pki_options opt;
  opt.self_signed = true;
  opt.dns_names = {"self.example.test"};
  auto paths = tls::make_pki(dir.path().string(), opt);
  CHECK(paths.root_cert.empty());
  CHECK(paths.issuer.empty());
  CHECK(paths.ocsp_index.empty());
  auto chain = tls::read_certificate_chain(paths.chain);
  REQUIRE(chain.size() == 1);
  CHECK(chain[0].self_signed);
  CHECK_FALSE(chain[0].is_ca);
  CHECK(chain[0].subject == "CN=self.example.test");
  CHECK(chain[0].issuer == chain[0].subject);
  CHECK_FALSE(tls::issuer_available(paths.chain, {}));
}

TEST_CASE("issuer_available finds the leaf's issuer in the chain or in a CA file") {
  temp_dir dir;
  auto paths = tls::make_pki(dir.path().string());
  CHECK(tls::issuer_available(paths.chain, {}));
  CHECK_FALSE(tls::issuer_available(paths.leaf_cert, {}));
  CHECK(tls::issuer_available(paths.leaf_cert, {paths.issuer}));
  CHECK(tls::issuer_available(paths.leaf_cert, {paths.intermediate_cert}));
  // The root did not issue the leaf directly.
  CHECK_FALSE(tls::issuer_available(paths.leaf_cert, {paths.root_cert}));
  // Unreadable CA files are skipped.
  const std::string missing = (dir.path() / "missing.crt").string();
  CHECK_FALSE(tls::issuer_available(paths.leaf_cert, {missing}));
  CHECK(tls::issuer_available(paths.leaf_cert, {missing, paths.issuer}));
  // A bundle with several CAs counts too.
  auto bundle = dir.write("bundle.pem", ngxtls::test::read_file(paths.root_cert) +
                                            ngxtls::test::read_file(paths.issuer));
  CHECK(tls::issuer_available(paths.leaf_cert, {bundle.string()}));
  CHECK_THROWS_AS(tls::issuer_available(missing, {paths.issuer}), tls::file_error);
}

TEST_CASE("unreadable certificate files raise file_error naming the path") {
  temp_dir dir;
  const std::string missing = (dir.path() / "nope.pem").string();
  try {
    tls::read_certificate_chain(missing);
    FAIL("no exception");
  } catch (const tls::file_error& e) {
    CHECK(e.missing());
    CHECK(e.path() == missing);
    CHECK(std::string(e.what()).rfind(missing + ": ", 0) == 0);
  }
  auto garbage = dir.write("garbage.pem", "not a certificate\n");
  try {
    tls::read_certificate_chain(garbage.string());
    FAIL("no exception");
  } catch (const tls::file_error& e) {
    CHECK_FALSE(e.missing());
    CHECK(e.reason() == "no certificate found");
  }
  auto truncated =
      dir.write("truncated.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  CHECK_THROWS_AS(tls::read_certificate_chain(truncated.string()), tls::file_error);
  CHECK_THROWS_AS(tls::read_certificate_chain(dir.path().string()), tls::file_error);

  // A key file is not a certificate, and the error does not quote it.
  auto paths = tls::make_pki((dir.path() / "pki").string());
  try {
    tls::read_certificate_chain(paths.leaf_key);
    FAIL("no exception");
  } catch (const tls::file_error& e) {
    CHECK(std::string(e.what()).find("PRIVATE") == std::string::npos);
  }
}

TEST_CASE("parse_certificate_chain reads PEM text from memory") {
  temp_dir dir;
  auto paths = tls::make_pki(dir.path().string());
  auto chain = tls::parse_certificate_chain(ngxtls::test::read_file(paths.chain), "data:");
  REQUIRE(chain.size() == 2);
  CHECK(chain[0].subject == "CN=localhost");
  CHECK_THROWS_AS(tls::parse_certificate_chain("", "data:"), tls::file_error);
}

TEST_CASE("keys are written 0600 and match their certificates") {
  temp_dir dir;
  auto paths = tls::make_pki(dir.path().string());
  CHECK(mode_of(paths.leaf_key) == 0600);
  CHECK(mode_of(paths.root_key) == 0600);
  CHECK(mode_of(paths.intermediate_key) == 0600);
  CHECK(mode_of(paths.leaf_cert) == 0644);
  CHECK(tls::key_matches_certificate(paths.leaf_cert, paths.leaf_key) == std::nullopt);
  CHECK(tls::key_matches_certificate(paths.chain, paths.leaf_key) == std::nullopt);
  auto mismatch = tls::key_matches_certificate(paths.leaf_cert, paths.root_key);
  REQUIRE(mismatch.has_value());
  CHECK(mismatch->find("does not match") != std::string::npos);
  CHECK_THROWS_AS(tls::key_matches_certificate(paths.leaf_cert, paths.leaf_cert), tls::file_error);
  const std::string encrypted = (dir.path() / "encrypted.key").string();
  auto r = ngxtls::test::run({"openssl", "pkey", "-in", paths.leaf_key, "-aes256", "-passout",
                              "pass:secret", "-out", encrypted});
  REQUIRE(r.exit_code == 0);
  auto enc = tls::key_matches_certificate(paths.leaf_cert, encrypted);
  REQUIRE(enc.has_value());
  CHECK(enc->find("encrypted") != std::string::npos);
  CHECK_THROWS_AS(tls::key_matches_certificate(paths.leaf_cert, (dir.path() / "none.key").string()),
                  tls::file_error);
}

TEST_CASE("the OCSP index lists the leaf as valid under its serial") {
  temp_dir dir;
  auto paths = tls::make_pki(dir.path().string());
  auto leaf = tls::read_certificate_chain(paths.leaf_cert).at(0);
  auto index = ngxtls::test::read_file(paths.ocsp_index);
  CHECK(index.rfind("V\t", 0) == 0);
  CHECK(index.find("\t" + leaf.serial_hex + "\tunknown\t/CN=localhost\n") != std::string::npos);
  CHECK(std::count(index.begin(), index.end(), '\n') == 1);
}

TEST_CASE("a stand-in keeps the real certificate's key, names, lifetime and OCSP URL presence") {
  temp_dir dir;
  tls::pki_options real_opt;
  real_opt.key_type = "rsa";
  real_opt.rsa_bits = 2048;
  real_opt.dns_names = {"www.example.com", "example.com"};
  real_opt.ocsp_url = "http://ocsp.example.com/";
  real_opt.not_after_offset_s = 10 * 86400;
  auto real_paths = tls::make_pki((dir.path() / "real").string(), real_opt);
  auto real = tls::read_certificate_chain(real_paths.leaf_cert).at(0);

  auto opt = tls::stand_in_options(real, "http://127.0.0.1:1234/");
  auto stand_in =
      tls::read_certificate_chain(tls::make_pki((dir.path() / "s").string(), opt).leaf_cert).at(0);
  CHECK(stand_in.key_type == "RSA");
  CHECK(stand_in.key_bits == 2048);
  CHECK(stand_in.dns_names == real.dns_names);
  CHECK(stand_in.ocsp_urls == std::vector<std::string>{"http://127.0.0.1:1234/"});
  CHECK(stand_in.not_after_unix >= real.not_after_unix - 60);
  CHECK(stand_in.not_after_unix <= real.not_after_unix + 60);
  CHECK(stand_in.sha256_hex != real.sha256_hex);
  CHECK_THROWS_AS(tls::stand_in_options(real), std::invalid_argument);

  tls::pki_options ec_opt;
  ec_opt.curve = "secp384r1";
  auto ec =
      tls::read_certificate_chain(tls::make_pki((dir.path() / "ec").string(), ec_opt).leaf_cert)
          .at(0);
  auto ec_stand_in = tls::stand_in_options(ec);
  CHECK(ec_stand_in.key_type == "ec");
  CHECK(ec_stand_in.curve == "secp384r1");
  CHECK_FALSE(ec_stand_in.ocsp_url.has_value());
}

TEST_CASE("the shared cases' CLI-made PKI reads as make-pki.sh describes it") {
  const auto script = ngxtls::test::cases_dir() / "make-pki.sh";
  if (!std::filesystem::exists(script)) return;
  temp_dir dir;
  auto r = ngxtls::test::run({"sh", script.string(), dir.path().string()});
  REQUIRE(r.exit_code == 0);
  const auto pki = dir.path() / "pki";
  auto at = [&](const char* name) { return (pki / name).string(); };
  const std::vector<std::string> names = {"example.com", "a.example.com", "b.example.com"};

  auto noocsp = tls::read_certificate_chain(at("leaf_noocsp.crt"));
  REQUIRE(noocsp.size() == 1);
  CHECK(noocsp[0].ocsp_urls.empty());
  CHECK(noocsp[0].dns_names == names);
  CHECK(noocsp[0].subject == "CN=example.com");
  CHECK(noocsp[0].issuer == "CN=ngxtls test CA");
  CHECK(noocsp[0].key_type == "EC");
  CHECK(noocsp[0].curve == "prime256v1");
  CHECK(tls::read_certificate_chain(at("leaf_ocsp.crt")).at(0).ocsp_urls ==
        std::vector<std::string>{"http://ocsp.example.com/"});
  CHECK(tls::read_certificate_chain(at("leaf_ocsplocal.crt")).at(0).ocsp_urls ==
        std::vector<std::string>{"http://localhost:8889/"});

  auto full = tls::read_certificate_chain(at("fullchain_noocsp.pem"));
  REQUIRE(full.size() == 2);
  CHECK(full[1].self_signed);
  CHECK(full[1].is_ca);
  CHECK(tls::issuer_available(at("fullchain_noocsp.pem"), {}));
  CHECK_FALSE(tls::issuer_available(at("leaf_noocsp.crt"), {}));
  CHECK(tls::issuer_available(at("leaf_noocsp.crt"), {at("ca.crt")}));
  CHECK(tls::key_matches_certificate(at("leaf_ocsp.crt"), at("leaf.key")) == std::nullopt);
}
