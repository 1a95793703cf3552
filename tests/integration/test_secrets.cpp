// Secrets never reach output: real private keys, ticket keys (48 and 80 bytes) and a
// session saved from a real nginx are generated here; every output format of every command,
// and the error paths that read those files, are run through the real binary; stdout and
// stderr must hold none of: the private keys' PEM body (any 24-character piece of it), the
// private scalar in hex or base64, the ticket keys' bytes after the 16-byte key name (the name
// is public: it starts every ticket) in hex, base64 or raw, and the session's master key.
// Also: --sess-out writes mode 0600 and replaces a symlink instead of writing through it.

#include <doctest/doctest.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "probe_util.hpp"
#include "report/format.hpp"
#include "support/fixture_env.hpp"
#include "support/nginx_instance.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"
#include "tls/ticket_key.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using namespace ngxtls::test;

namespace {

std::string hex(const std::string& bytes, bool upper = false) {
  static const char* lo = "0123456789abcdef";
  static const char* up = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    out += (upper ? up : lo)[c >> 4];
    out += (upper ? up : lo)[c & 15];
  }
  return out;
}

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

/// Substrings that must never appear in any output, each with a label for the failure message.
struct secret_set {
  std::vector<std::pair<std::string, std::string>> needles;  // (label, bytes)

  void add(const std::string& label, const std::string& s) {
    if (!s.empty()) needles.emplace_back(label, s);
  }
  /// Every `width`-byte window of `s` (a secret is leaked in part too).
  void add_windows(const std::string& label, const std::string& s, std::size_t width) {
    if (s.size() <= width) return add(label, s);
    for (std::size_t i = 0; i + width <= s.size(); ++i)
      add(label + "[" + std::to_string(i) + "]", s.substr(i, width));
  }
  /// Secret bytes: hex (both cases) and base64 in windows, raw in 8-byte windows.
  void add_bytes(const std::string& label, const std::string& bytes) {
    add_windows(label + " hex", hex(bytes), 16);
    add_windows(label + " HEX", hex(bytes, true), 16);
    add_windows(label + " raw", bytes, 8);
    add(label + " base64", base64(bytes));
  }

  void add_private_key_file(const fs::path& p) {
    const std::string pem = read_file(p);
    // The PEM body, lines joined (a reformatted dump would join them), without the first 48
    // characters: they encode the PKCS#8 structure and algorithm, the same for every key.
    std::string body;
    std::size_t pos = 0;
    while (pos < pem.size()) {
      std::size_t eol = pem.find('\n', pos);
      if (eol == std::string::npos) eol = pem.size();
      std::string line = pem.substr(pos, eol - pos);
      if (line.rfind("-----", 0) != 0) body += line;
      pos = eol + 1;
    }
    REQUIRE(body.size() > 100);
    add_windows("PEM body of " + p.string(), body.substr(48), 24);
    // The private scalar / raw private key.
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(
        BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
        PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
    REQUIRE(key);
    BIGNUM* priv = nullptr;
    if (EVP_PKEY_get_bn_param(key.get(), OSSL_PKEY_PARAM_PRIV_KEY, &priv) == 1) {
      std::string raw(static_cast<std::size_t>(BN_num_bytes(priv)), '\0');
      BN_bn2bin(priv, reinterpret_cast<unsigned char*>(raw.data()));
      BN_clear_free(priv);
      add_bytes("private scalar of " + p.string(), raw);
    }
  }

  void add_ticket_key_file(const fs::path& p) {
    const std::string bytes = read_file(p);
    REQUIRE(bytes.size() > 16);
    add_bytes("ticket key after the name in " + p.string(), bytes.substr(16));
    add("base64 of " + p.string(), base64(bytes));
  }

  void add_session_file(const fs::path& p) {
    const std::string pem = read_file(p);
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(
        BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
    std::unique_ptr<SSL_SESSION, decltype(&SSL_SESSION_free)> s(
        PEM_read_bio_SSL_SESSION(bio.get(), nullptr, nullptr, nullptr), SSL_SESSION_free);
    REQUIRE(s);
    unsigned char mk[256];
    std::size_t n = SSL_SESSION_get_master_key(s.get(), mk, sizeof mk);
    REQUIRE(n >= 32);
    add_bytes("master key of " + p.string(), std::string(reinterpret_cast<char*>(mk), n));
  }
};

/// The label of the first secret found in `text`, or "" when none is.
std::string leaked(const secret_set& secrets, const std::string& text) {
  for (const auto& [label, needle] : secrets.needles)
    if (text.find(needle) != std::string::npos) return label;
  return {};
}

/// Runs ngxtls and checks that neither stdout nor stderr holds any secret; returns the result.
command_result run_checked(const secret_set& secrets, std::vector<std::string> args,
                           const std::string& input = "") {
  args.insert(args.begin(), ngxtls_binary());
  std::string cmd;
  for (const auto& a : args) cmd += a + " ";
  CAPTURE(cmd);
  command_result r = run(args, input, 120);
  CHECK(r.exit_code < 128);  // no crash
  CHECK(r.err.find("terminate called") == std::string::npos);
  for (const auto& [label, needle] : secrets.needles) {
    const bool in_out = r.out.find(needle) != std::string::npos;
    const bool in_err = r.err.find(needle) != std::string::npos;
    if (in_out || in_err) {
      // CAPTURE's lambda cannot capture a structured binding under clang 14: a named reference.
      const auto& label_shown = label;
      CAPTURE(label_shown);
      CAPTURE(r.out.substr(0, 4000));
      CAPTURE(r.err.substr(0, 4000));
      FAIL_CHECK("a secret appears in " << (in_out ? "stdout" : "stderr"));
    }
  }
  return r;
}

}  // namespace

TEST_CASE("no output of any command or format holds a private key, ticket key or master secret") {
  temp_dir t;
  make_fixture_material(t.path());
  const fs::path keys = t.path() / "keys";
  const fs::path live_pki_dir = t.path() / "live";
  tls::pki_paths pki = tls::make_pki(live_pki_dir.string(), {});
  const std::string key80 = (keys / "k1.key").string();
  const std::string key48 = (keys / "k48.key").string();
  const std::string open_key = (keys / "open.key").string();

  // A live nginx with the generated key and both ticket key sizes.
  const int port = free_port();
  const std::string extra = "ssl_session_cache shared:S:1m;\n  ssl_session_ticket_key " + key80 +
                            ";\n  ssl_session_ticket_key " + key48 +
                            ";\n  ssl_session_ticket_key " + open_key + ";";
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(1, tls_server(port, pki, extra)), no);
  const std::string target = "127.0.0.1:" + std::to_string(port);
  const std::string conf = ngx.conf_path().string();

  // Save a session of each protocol; their master keys join the secrets.
  const std::string sess13 = (t.path() / "s13.pem").string();
  const std::string sess12 = (t.path() / "s12.pem").string();
  secret_set secrets;
  for (const auto& p : fs::recursive_directory_iterator(t.path())) {
    if (p.path().extension() != ".key" || !p.is_regular_file()) continue;
    if (read_file(p.path()).rfind("-----BEGIN", 0) == 0)
      secrets.add_private_key_file(p.path());
    else
      secrets.add_ticket_key_file(p.path());
  }
  REQUIRE(secrets.needles.size() > 100);
  for (const auto& [sess, flag] : {std::pair{sess13, "--tls1.3"}, std::pair{sess12, "--tls1.2"}}) {
    auto r = run_checked(secrets, {"probe", target, "--sni", "localhost", flag, "-n", "2",
                                   "--no-ocsp", "--sess-out", sess});
    REQUIRE(r.exit_code == 0);
    struct stat st {};
    REQUIRE(::stat(sess.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
  }
  secret_set with_sessions = secrets;
  with_sessions.add_session_file(sess13);
  with_sessions.add_session_file(sess12);
  const secret_set& s = with_sessions;
  // The detector itself: each kind of secret, as it would leak, is found.
  CHECK(leaked(s, read_file(pki.leaf_key)) != "");
  CHECK(leaked(s, "key: " + hex(read_file(key80).substr(40, 10)) + "\n") != "");
  CHECK(leaked(s, "key: " + hex(read_file(key48).substr(16), true) + "\n") != "");
  {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(sess12.c_str(), "r"), BIO_free);
    std::unique_ptr<SSL_SESSION, decltype(&SSL_SESSION_free)> sess(
        PEM_read_bio_SSL_SESSION(bio.get(), nullptr, nullptr, nullptr), SSL_SESSION_free);
    REQUIRE(sess);
    unsigned char mk[256];
    std::size_t n = SSL_SESSION_get_master_key(sess.get(), mk, sizeof mk);
    CHECK(leaked(s, "Master-Key: " + hex(std::string(reinterpret_cast<char*>(mk), n), true)) != "");
  }
  CHECK(leaked(s, read_file(conf)) == "");

  SUBCASE("probe: every format, --sess-in and --sess-out") {
    for (const std::string& fmt : report::format_names(report::command::probe)) {
      CAPTURE(fmt);
      CHECK(run_checked(s, {"probe", target, "--sni", "localhost", "-n", "3", "--format", fmt})
                .exit_code == 0);
      CHECK(run_checked(s, {"probe", target, "--sni", "localhost", "-n", "3", "--format", fmt,
                            "--sess-in", sess13})
                .exit_code == 0);
      CHECK(run_checked(s, {"probe", target, "--sni", "localhost", "-n", "3", "--format", fmt,
                            "--sess-in", sess12})
                .exit_code == 0);
      CHECK(
          run_checked(s, {"probe", target, "--sni", "localhost", "-n", "1", "--no-ocsp", "--format",
                          fmt, "--sess-out", (t.path() / ("again-" + fmt + ".pem")).string()})
              .exit_code == 0);
    }
    // A key file or ticket key file named as a session file.
    CHECK(run_checked(s, {"probe", target, "--sess-in", pki.leaf_key}).exit_code == 2);
    CHECK(run_checked(s, {"probe", target, "--sess-in", key80}).exit_code == 2);
  }
  SUBCASE("lint: every format, with and without --strict-files, and --fix") {
    for (const std::string& fmt : report::format_names(report::command::lint)) {
      CAPTURE(fmt);
      run_checked(s, {"lint", conf, "--nginx-version", "1.22.1", "--format", fmt});
      run_checked(s,
                  {"lint", conf, "--nginx-version", "1.22.1", "--format", fmt, "--strict-files"});
      run_checked(s, {"lint", "-", "--nginx-version", "1.22.1", "--format", fmt}, read_file(conf));
    }
    run_checked(s, {"lint", conf, "--nginx-version", "1.22.1", "--fix"});
  }
  SUBCASE("parse: every format") {
    CHECK(run_checked(s, {"parse", conf}).exit_code == 0);
    for (const std::string& fmt : report::format_names(report::command::parse)) {
      CAPTURE(fmt);
      CHECK(run_checked(s, {"parse", conf, "--format", fmt}).exit_code == 0);
    }
  }
  SUBCASE("check --endpoint: every format") {
    for (const std::string& fmt : report::format_names(report::command::check)) {
      CAPTURE(fmt);
      auto r = run_checked(s, {"check", conf, "--nginx-version", "1.22.1", "--endpoint", target,
                               "-n", "3", "--format", fmt, "--fail-on", "never"});
      CAPTURE(r.err);
      CHECK(r.exit_code == 0);
    }
  }
  SUBCASE("check --sandbox: every format") {
    // The sandbox copies or stands in for keys and ticket key files: its output and nginx's
    // messages it relays must not carry them either.
    for (const std::string& fmt : report::format_names(report::command::check)) {
      CAPTURE(fmt);
      auto r = run_checked(s, {"check", conf, "--nginx-version", "1.22.1", "--sandbox", "-n", "3",
                               "--format", fmt, "--fail-on", "never"});
      CAPTURE(r.err);
      CHECK(r.exit_code != 2);
    }
  }
  SUBCASE("harden: with the key, the certificate and the ticket key directory") {
    for (const std::string& fmt : report::format_names(report::command::harden)) {
      CAPTURE(fmt);
      run_checked(s, {"harden", "--nginx-version", "1.22.1", "--openssl-version", "3.0.0", "--cert",
                      pki.chain, "--key", pki.leaf_key, "--ticket-key-dir", keys.string(),
                      "--format", fmt});
      // The key where the certificate is expected.
      auto r = run_checked(
          s, {"harden", "--nginx-version", "1.22.1", "--cert", pki.leaf_key, "--format", fmt});
      CHECK(r.exit_code == 2);
      r = run_checked(s, {"harden", "--nginx-version", "1.22.1", "--cert", key80, "--format", fmt});
      CHECK(r.exit_code == 2);
    }
  }
  SUBCASE("error paths: key files where certificates, configs or ticket keys are expected") {
    const std::string swapped =
        t.write(
             "swapped.conf",
             "events {}\nhttp {\n server {\n  listen 443 ssl;\n  ssl_protocols TLSv1.2 TLSv1.3;\n"
             "  ssl_certificate " +
                 pki.leaf_key + ";\n  ssl_certificate_key " + pki.chain +
                 ";\n }\n server {\n  listen 8443 ssl;\n  ssl_certificate " + key80 +
                 ";\n  ssl_certificate_key " + key48 + ";\n  ssl_session_ticket_key " +
                 pki.leaf_key + ";\n  ssl_dhparam " + pki.leaf_key +
                 ";\n  ssl_trusted_certificate " + key80 + ";\n }\n}\n")
            .string();
    for (const std::string& fmt : report::format_names(report::command::lint)) {
      CAPTURE(fmt);
      run_checked(s, {"lint", swapped, "--nginx-version", "1.22.1", "--format", fmt});
      run_checked(
          s, {"lint", swapped, "--nginx-version", "1.22.1", "--format", fmt, "--strict-files"});
    }
    // Secret files named as the configuration itself (syntax errors quote input text).
    for (const std::string& f : {pki.leaf_key, key80, key48, sess13, sess12}) {
      CAPTURE(f);
      CHECK(run_checked(s, {"lint", f, "--nginx-version", "1.22.1"}).exit_code == 2);
      CHECK(run_checked(s, {"parse", f}).exit_code == 2);
      CHECK(run_checked(s, {"lint", "-", "--nginx-version", "1.22.1"}, read_file(f)).exit_code ==
            2);
    }
    // Included as configuration.
    const std::string inc =
        t.write("inc.conf", "include " + pki.leaf_key + ";\ninclude " + key80 + ";\n").string();
    CHECK(run_checked(s, {"lint", inc, "--nginx-version", "1.22.1"}).exit_code == 2);
    CHECK(run_checked(
              s, {"check", swapped, "--nginx-version", "1.22.1", "--endpoint", target, "-n", "1"})
              .exit_code < 128);
  }
}

TEST_CASE(
    "--sess-out is mode 0600 even over an existing file, and never writes through a symlink") {
  temp_dir t;
  tls::pki_paths pki = tls::make_pki((t.path() / "pki").string(), {});
  const int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(1, tls_server(port, pki, "ssl_session_cache shared:S:1m;")), no);
  const std::string target = "127.0.0.1:" + std::to_string(port);
  auto probe_to = [&](const fs::path& out) {
    return run({ngxtls_binary(), "probe", target, "--sni", "localhost", "--tls1.3", "-n", "1",
                "--no-ocsp", "--sess-out", out.string()},
               "", 60);
  };
  // An existing world-readable file is replaced by a 0600 one.
  const fs::path existing = t.write("existing.pem", "old\n");
  ::chmod(existing.c_str(), 0644);
  REQUIRE(probe_to(existing).exit_code == 0);
  struct stat st {};
  REQUIRE(::stat(existing.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(read_file(existing).rfind("-----BEGIN SSL SESSION PARAMETERS-----", 0) == 0);
  // A symlink at the target path, pointing at a file someone else may read: refused, the
  // victim keeps its content and mode, the link stays a link.
  const fs::path victim = t.write("victim.txt", "do not overwrite\n");
  ::chmod(victim.c_str(), 0644);
  const fs::path link = t.path() / "link.pem";
  fs::create_symlink(victim, link);
  auto r = probe_to(link);
  CAPTURE(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("ngxtls: error: " + link.string() +
                   ": cannot write session file: it is a symbolic link (not followed)") !=
        std::string::npos);
  CHECK(read_file(victim) == "do not overwrite\n");
  REQUIRE(::stat(victim.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0644);
  REQUIRE(::lstat(link.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  // A dangling symlink (the classic link planted in a shared directory) is not followed either.
  const fs::path dangling = t.path() / "dangling.pem";
  fs::create_symlink(t.path() / "created-through-link", dangling);
  CHECK(probe_to(dangling).exit_code == 2);
  CHECK_FALSE(fs::exists(t.path() / "created-through-link"));
  // A FIFO at the path: refused without blocking.
  REQUIRE(::mkfifo((t.path() / "fifo.pem").c_str(), 0600) == 0);
  CHECK(probe_to(t.path() / "fifo.pem").err.find("cannot write session file: not a regular file") !=
        std::string::npos);
  // No temporary files are left behind.
  for (const auto& e : fs::directory_iterator(t.path()))
    CHECK(e.path().filename().string().rfind(".ngxtls-", 0) != 0);
}

TEST_CASE("a world-readable ticket key file is reported by lint") {
  temp_dir t;
  make_fixture_material(t.path());
  const std::string conf = t.write("nginx.conf",
                                   "events {}\nhttp {\n server {\n  listen 443 ssl;\n"
                                   "  ssl_session_ticket_key " +
                                       (t.path() / "keys/open.key").string() + ";\n }\n}\n")
                               .string();
  auto r = run({ngxtls_binary(), "lint", conf, "--nginx-version", "1.22.1", "--format", "json",
                "--fail-on", "never"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("is readable by group or others (mode 0644)") != std::string::npos);
}

// private-key-readable reports the key's mode, never its content.
TEST_CASE("a world-readable ssl_certificate_key is reported by lint") {
  temp_dir t;
  tls::pki_paths pki = tls::make_pki((t.path() / "pki").string(), {});
  ::chmod(pki.leaf_key.c_str(), 0644);
  const std::string conf =
      t.write("nginx.conf",
              "events {}\nhttp {\n server {\n  listen 443 ssl;\n"
              "  ssl_certificate " +
                  pki.chain + ";\n  ssl_certificate_key " + pki.leaf_key + ";\n }\n}\n")
          .string();
  auto r = run({ngxtls_binary(), "lint", conf, "--nginx-version", "1.22.1", "--format", "json",
                "--fail-on", "never"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"private-key-readable\"") != std::string::npos);
  CHECK(r.out.find("0644") != std::string::npos);
}
