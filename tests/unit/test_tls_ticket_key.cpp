#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

#include "support/process.hpp"
#include "tls/ticket_key.hpp"

namespace tls = ngxtls::tls;
using ngxtls::test::temp_dir;

namespace {

std::string hex(const std::string& bytes) {
  static constexpr char d[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

}  // namespace

TEST_CASE("a written 80-byte ticket key is 0600 and its name is its first 16 bytes") {
  temp_dir dir;
  const std::string path = (dir.path() / "k1.key").string();
  std::string name = tls::write_ticket_key_file(path);
  CHECK(name.size() == 32);
  auto content = ngxtls::test::read_file(path);
  REQUIRE(content.size() == 80);
  CHECK(name == hex(content.substr(0, 16)));

  auto info = tls::inspect_ticket_key_file(path);
  CHECK(info.size_bytes == 80);
  CHECK(info.mode == 0600);
  CHECK_FALSE(info.group_or_other_readable);
  CHECK(info.valid_size);
  CHECK(info.key_name_hex == name);
  REQUIRE(info.fingerprint.size() == 16);
  // The fingerprint is the start of the file's SHA-256, as sha256sum prints it.
  auto sum = ngxtls::test::run({"sha256sum", path});
  REQUIRE(sum.exit_code == 0);
  CHECK(sum.out.substr(0, 16) == info.fingerprint);
}

TEST_CASE("ticket key fingerprints are stable per file and differ between files") {
  temp_dir dir;
  const std::string a = (dir.path() / "a.key").string();
  const std::string b = (dir.path() / "b.key").string();
  tls::write_ticket_key_file(a);
  tls::write_ticket_key_file(b);
  auto a1 = tls::inspect_ticket_key_file(a);
  auto a2 = tls::inspect_ticket_key_file(a);
  auto bi = tls::inspect_ticket_key_file(b);
  CHECK(a1.fingerprint == a2.fingerprint);
  CHECK(a1.key_name_hex == a2.key_name_hex);
  CHECK(a1.fingerprint != bi.fingerprint);
  CHECK(a1.key_name_hex != bi.key_name_hex);
  // A copy elsewhere has the same fingerprint: that is how hosts are compared.
  auto copy = dir.write("copy.key", ngxtls::test::read_file(a));
  CHECK(tls::inspect_ticket_key_file(copy.string()).fingerprint == a1.fingerprint);
}

TEST_CASE("ticket key files of 48 and 80 bytes are valid, other sizes are not") {
  temp_dir dir;
  const std::string k48 = (dir.path() / "k48.key").string();
  tls::write_ticket_key_file(k48, 48);
  auto info = tls::inspect_ticket_key_file(k48);
  CHECK(info.size_bytes == 48);
  CHECK(info.valid_size);
  for (std::size_t n : {0u, 16u, 32u, 47u, 49u, 64u, 81u, 128u}) {
    auto p = dir.write("k" + std::to_string(n) + ".bin", std::string(n, 'x'));
    auto i = tls::inspect_ticket_key_file(p.string());
    CHECK(i.size_bytes == n);
    CHECK_FALSE(i.valid_size);
    CHECK(i.key_name_hex.size() == 2 * std::min<std::size_t>(n, 16));
  }
  CHECK_THROWS_AS(tls::write_ticket_key_file((dir.path() / "k64").string(), 64),
                  std::invalid_argument);
}

TEST_CASE("a group- or world-readable ticket key file is flagged") {
  temp_dir dir;
  auto p = dir.write("open.key", std::string(80, 'k'));
  REQUIRE(::chmod(p.c_str(), 0644) == 0);
  auto info = tls::inspect_ticket_key_file(p.string());
  CHECK(info.mode == 0644);
  CHECK(info.group_or_other_readable);
  REQUIRE(::chmod(p.c_str(), 0640) == 0);
  CHECK(tls::inspect_ticket_key_file(p.string()).group_or_other_readable);
  REQUIRE(::chmod(p.c_str(), 0600) == 0);
  CHECK_FALSE(tls::inspect_ticket_key_file(p.string()).group_or_other_readable);
  // Rewriting an existing open file makes it 0600 again.
  REQUIRE(::chmod(p.c_str(), 0644) == 0);
  tls::write_ticket_key_file(p.string());
  CHECK(tls::inspect_ticket_key_file(p.string()).mode == 0600);
}

TEST_CASE("a missing ticket key file raises file_error without key material") {
  temp_dir dir;
  const std::string p = (dir.path() / "missing.key").string();
  try {
    tls::inspect_ticket_key_file(p);
    FAIL("no exception");
  } catch (const tls::file_error& e) {
    CHECK(e.missing());
    CHECK(std::string(e.what()) == p + ": No such file or directory");
  }
  CHECK_THROWS_AS(tls::inspect_ticket_key_file(dir.path().string()), tls::file_error);
  CHECK_THROWS_AS(tls::write_ticket_key_file((dir.path() / "no/such/dir/k.key").string()),
                  tls::file_error);
}

TEST_CASE("the shared cases' ticket keys are valid 0600 files with distinct names") {
  const auto script = ngxtls::test::cases_dir() / "make-pki.sh";
  if (!std::filesystem::exists(script)) return;
  temp_dir dir;
  auto r = ngxtls::test::run({"sh", script.string(), dir.path().string()});
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> seen;
  for (const char* k : {"k1.key", "k2.key", "k3.key"}) {
    auto info = tls::inspect_ticket_key_file((dir.path() / "keys" / k).string());
    CHECK(info.size_bytes == 80);
    CHECK(info.valid_size);
    CHECK(info.mode == 0600);
    CHECK(std::find(seen.begin(), seen.end(), info.key_name_hex) == seen.end());
    seen.push_back(info.key_name_hex);
  }
}
