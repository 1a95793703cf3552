#include "support/fixture_env.hpp"

#include <sys/stat.h>

#include <fstream>
#include <random>

#include "tls/pki.hpp"
#include "tls/ticket_key.hpp"

namespace ngxtls::test {
namespace fs = std::filesystem;

namespace {
void write_random(const fs::path& p, std::size_t n, unsigned mode) {
  std::random_device rd;
  std::string bytes(n, '\0');
  for (auto& c : bytes) c = static_cast<char>(rd() & 0xff);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  ::chmod(p.c_str(), mode);
}
}  // namespace

void make_fixture_material(const fs::path& dir) {
  fs::create_directories(dir / "keys");
  for (const char* k : {"k1", "k2", "k3"})
    tls::write_ticket_key_file((dir / "keys" / (std::string(k) + ".key")).string(), 80);
  fs::copy_file(dir / "keys/k1.key", dir / "keys/k1-copy.key",
                fs::copy_options::overwrite_existing);
  ::chmod((dir / "keys/k1-copy.key").c_str(), 0600);
  tls::write_ticket_key_file((dir / "keys/k48.key").string(), 48);
  write_random(dir / "keys/short.key", 50, 0600);
  write_random(dir / "keys/open.key", 80, 0644);
  // QUIC host keys (not .key: the ticket key files are those).
  write_random(dir / "keys/k8.quic", 8, 0600);     // too short to stay secret
  write_random(dir / "keys/empty.quic", 0, 0600);  // nginx: "zero key size"

  tls::pki_options none;
  auto noocsp = tls::make_pki((dir / "pki/noocsp").string(), none);
  tls::write_ocsp_response(noocsp, (dir / "pki/noocsp/ocsp.der").string());
  // The same private key with loose modes, for private-key-readable.
  std::filesystem::copy_file(noocsp.leaf_key, dir / "pki/noocsp/leaf-world.key");
  ::chmod((dir / "pki/noocsp/leaf-world.key").c_str(), 0644);
  std::filesystem::copy_file(noocsp.leaf_key, dir / "pki/noocsp/leaf-group.key");
  ::chmod((dir / "pki/noocsp/leaf-group.key").c_str(), 0640);
  write_random(dir / "pki/noocsp/password-world.txt", 16, 0644);
  tls::pki_options ip;
  ip.ocsp_url = "http://127.0.0.1:9/";
  tls::make_pki((dir / "pki/ocspip").string(), ip);
  tls::pki_options host;
  host.ocsp_url = "http://ocsp.example.test/";
  tls::make_pki((dir / "pki/ocsphost").string(), host);
  tls::pki_options self;
  self.self_signed = true;
  tls::make_pki((dir / "pki/self").string(), self);
}

void make_certificate_material(const fs::path& dir) {
  auto named = [] {
    tls::pki_options o;
    o.dns_names = {"example.test", "*.example.test"};
    return o;
  };
  auto good = tls::make_pki((dir / "pki/named").string(), named());
  {
    std::ifstream leaf(good.leaf_cert), inter(good.intermediate_cert);
    std::ofstream out(dir / "pki/named/reversed.pem", std::ios::trunc);
    out << inter.rdbuf() << leaf.rdbuf();
  }
  auto rsa = named();
  rsa.key_type = "rsa";
  rsa.rsa_bits = 1024;
  tls::make_pki((dir / "pki/rsa1024").string(), rsa);
  auto p521 = named();
  p521.curve = "secp521r1";
  tls::make_pki((dir / "pki/p521").string(), p521);
  auto expired = named();
  expired.not_before_offset_s = -30 * 86400;
  expired.not_after_offset_s = -86400;
  tls::make_pki((dir / "pki/expired").string(), expired);
  auto expiring = named();
  expiring.not_after_offset_s = 10 * 86400 + 3600;
  tls::make_pki((dir / "pki/expiring").string(), expiring);
}

}  // namespace ngxtls::test
