// docs/nginx-facts.md#ocsp-stapling-quiet (and the key-file size of
// docs/nginx-facts.md#ticket-key-rotation) measured against the installed nginx: `nginx -t` exits 0
// and warns on stderr when stapling cannot work; ngxtls::tls must agree.
#include <doctest/doctest.h>

#include <filesystem>

#include "support/nginx_run.hpp"
#include "support/ocsp_responder.hpp"
#include "support/process.hpp"
#include "tls/certificate.hpp"
#include "tls/pki.hpp"
#include "tls/ticket_key.hpp"

namespace tls = ngxtls::tls;
using ngxtls::test::temp_dir;

namespace {

const std::string nginx_bin = "/usr/sbin/nginx";

// `nginx -t` on one TLS server with `extra` directives inside the server block.
ngxtls::test::command_result nginx_t(const temp_dir& dir, const std::string& cert,
                                     const std::string& key, const std::string& extra) {
  const std::string d = dir.path().string();
  const int port = ngxtls::test::free_port();
  dir.write("nginx.conf",
            "events {}\n"
            "http {\n"
            "  server {\n"
            "    listen 127.0.0.1:" +
                std::to_string(port) +
                " ssl;\n"
                "    ssl_certificate " +
                cert +
                ";\n"
                "    ssl_certificate_key " +
                key + ";\n" + extra +
                "  }\n"
                "}\n");
  return ngxtls::test::run_nginx({nginx_bin, "-t", "-p", d + "/", "-c", d + "/nginx.conf", "-e",
                                  d + "/error.log", "-g", "pid " + d + "/nginx.pid;"},
                                 "", 60);
}

const std::string no_url = "\"ssl_stapling\" ignored, no OCSP responder URL in the certificate";
const std::string no_issuer =
    "\"ssl_stapling\" ignored, issuer certificate not found for certificate";

}  // namespace

TEST_CASE("nginx ignores ssl_stapling with a warning when the certificate has no OCSP URL") {
  if (!std::filesystem::exists(nginx_bin)) return;
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string());  // no ocsp_url
  CHECK(tls::read_certificate_chain(pki.chain).at(0).ocsp_urls.empty());
  CHECK(tls::issuer_available(pki.chain, {}));
  auto r = nginx_t(dir, pki.chain, pki.leaf_key, "    ssl_stapling on;\n");
  MESSAGE("nginx -t stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("[warn]") != std::string::npos);
  CHECK(r.err.find(no_url + " \"" + pki.chain + "\"") != std::string::npos);
  CHECK(r.err.find(no_issuer) == std::string::npos);
}

TEST_CASE("nginx ignores ssl_stapling when the leaf's issuer is nowhere to be found") {
  if (!std::filesystem::exists(nginx_bin)) return;
  temp_dir dir;
  tls::pki_options opt;
  opt.ocsp_url = "http://127.0.0.1:" + std::to_string(ngxtls::test::free_port()) + "/";
  auto pki = tls::make_pki((dir.path() / "pki").string(), opt);
  CHECK_FALSE(tls::issuer_available(pki.leaf_cert, {}));
  auto r = nginx_t(dir, pki.leaf_cert, pki.leaf_key, "    ssl_stapling on;\n");
  MESSAGE("nginx -t stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find(no_issuer + " \"" + pki.leaf_cert + "\"") != std::string::npos);
}

TEST_CASE("a self-signed leaf without an OCSP URL gets the issuer warning first") {
  if (!std::filesystem::exists(nginx_bin)) return;
  temp_dir dir;
  tls::pki_options opt;
  opt.self_signed = true;
  auto pki = tls::make_pki((dir.path() / "pki").string(), opt);
  CHECK_FALSE(tls::issuer_available(pki.chain, {}));
  auto r = nginx_t(dir, pki.chain, pki.leaf_key, "    ssl_stapling on;\n");
  MESSAGE("nginx -t stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find(no_issuer) != std::string::npos);
  CHECK(r.err.find(no_url) == std::string::npos);
}

TEST_CASE("ssl_trusted_certificate supplies the issuer that a leaf-only certificate lacks") {
  if (!std::filesystem::exists(nginx_bin)) return;
  temp_dir dir;
  const int port = ngxtls::test::free_port();
  tls::pki_options opt;
  opt.ocsp_url = ngxtls::test::ocsp_responder::url_for(port);
  auto pki = tls::make_pki((dir.path() / "pki").string(), opt);
  CHECK(tls::issuer_available(pki.leaf_cert, {pki.issuer}));
  auto r = nginx_t(dir, pki.leaf_cert, pki.leaf_key,
                   "    ssl_stapling on;\n    ssl_trusted_certificate " + pki.issuer + ";\n");
  MESSAGE("nginx -t stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("ssl_stapling") == std::string::npos);
  // The full chain alone is enough too.
  auto full = nginx_t(dir, pki.chain, pki.leaf_key, "    ssl_stapling on;\n");
  CHECK(full.exit_code == 0);
  CHECK(full.err.find("ssl_stapling") == std::string::npos);
}

TEST_CASE("ssl_client_certificate CAs supply the stapling issuer when client verification is on") {
  if (!std::filesystem::exists(nginx_bin)) return;
  temp_dir dir;
  tls::pki_options opt;
  opt.ocsp_url = "http://127.0.0.1:" + std::to_string(ngxtls::test::free_port()) + "/";
  auto pki = tls::make_pki((dir.path() / "pki").string(), opt);
  for (const char* mode : {"on", "optional", "optional_no_ca"}) {
    auto with_verify = nginx_t(dir, pki.leaf_cert, pki.leaf_key,
                               std::string("    ssl_stapling on;\n    ssl_verify_client ") + mode +
                                   ";\n    ssl_client_certificate " + pki.issuer + ";\n");
    MESSAGE("with ssl_verify_client " << std::string(mode) << ": " << with_verify.err);
    CHECK(with_verify.exit_code == 0);
    CHECK(with_verify.err.find(no_issuer) == std::string::npos);
  }
  auto without_verify =
      nginx_t(dir, pki.leaf_cert, pki.leaf_key,
              "    ssl_stapling on;\n    ssl_client_certificate " + pki.issuer + ";\n");
  MESSAGE("without ssl_verify_client: " << without_verify.err);
  CHECK(without_verify.exit_code == 0);
  CHECK(without_verify.err.find(no_issuer) != std::string::npos);
}

TEST_CASE("nginx accepts 48- and 80-byte ticket key files and rejects other sizes") {
  if (!std::filesystem::exists(nginx_bin)) return;
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string());
  for (std::size_t n : {48u, 80u}) {
    const std::string key = (dir.path() / ("k" + std::to_string(n) + ".key")).string();
    tls::write_ticket_key_file(key, n);
    CHECK(tls::inspect_ticket_key_file(key).valid_size);
    auto r = nginx_t(dir, pki.chain, pki.leaf_key, "    ssl_session_ticket_key " + key + ";\n");
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  auto bad = dir.write("k64.key", std::string(64, 'x'));
  CHECK_FALSE(tls::inspect_ticket_key_file(bad.string()).valid_size);
  auto r =
      nginx_t(dir, pki.chain, pki.leaf_key, "    ssl_session_ticket_key " + bad.string() + ";\n");
  MESSAGE("nginx -t stderr: " << r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("\"" + bad.string() + "\" must be 48 or 80 bytes") != std::string::npos);
  // Reported at the `}` that closes http (line 9: the server's settings are merged there),
  // not at the directive (line 7).
  CHECK(r.err.find("nginx.conf:9") != std::string::npos);
}

TEST_CASE("nginx loads a generated OCSP response as ssl_stapling_file") {
  if (!std::filesystem::exists(nginx_bin)) return;
  temp_dir dir;
  tls::pki_options opt;
  opt.ocsp_url = "http://127.0.0.1:" + std::to_string(ngxtls::test::free_port()) + "/";
  auto pki = tls::make_pki((dir.path() / "pki").string(), opt);
  const std::string der = (dir.path() / "leaf.ocsp").string();
  tls::write_ocsp_response(pki, der);
  auto r = nginx_t(dir, pki.chain, pki.leaf_key,
                   "    ssl_stapling on;\n    ssl_stapling_file " + der + ";\n");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("[warn]") == std::string::npos);
  CHECK(r.err.find("[emerg]") == std::string::npos);
  // With a file nginx needs neither the issuer nor an OCSP URL: a leaf-only certificate
  // without a URL staples from the file without a warning.
  auto plain = tls::make_pki((dir.path() / "plain").string());
  const std::string plain_der = (dir.path() / "plain.ocsp").string();
  tls::write_ocsp_response(plain, plain_der);
  auto leaf_only = nginx_t(dir, plain.leaf_cert, plain.leaf_key,
                           "    ssl_stapling on;\n    ssl_stapling_file " + plain_der + ";\n");
  INFO(leaf_only.err);
  CHECK(leaf_only.exit_code == 0);
  CHECK(leaf_only.err.find("[warn]") == std::string::npos);
  // A file that is not DER OCSP is refused at load time.
  auto junk = dir.write("junk.ocsp", "not der");
  auto bad = nginx_t(dir, pki.chain, pki.leaf_key,
                     "    ssl_stapling on;\n    ssl_stapling_file " + junk.string() + ";\n");
  MESSAGE("junk ssl_stapling_file: " << bad.err);
  CHECK(bad.exit_code != 0);
}
