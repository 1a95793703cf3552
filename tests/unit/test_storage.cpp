// Tree storage: records live in one reserved range and refer to each other by
// 32-bit offsets; blocks go back to the range when a storage is destroyed.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "config/loader.hpp"
#include "config/tree.hpp"

using namespace ngxtls::config;

TEST_CASE(
    "a destroyed storage's blocks are taken again, so loading configs over and over stays "
    "in place") {
  constexpr std::size_t big = std::size_t{3} << 20;  // a run of its own (over a quarter chunk)
  std::uint32_t first = 0;
  for (int i = 0; i < 200; ++i) {
    storage s;
    char* p = s.allocate<char>(big);
    std::memset(p, 'x', big);  // committed: writable to the last byte
    CHECK(s.bytes_used() == big);
    const std::uint32_t off = detail::region_offset(p);
    if (i == 0)
      first = off;
    else
      REQUIRE(off == first);
  }
  // Small allocations share 1 MiB chunks; given back, the same chunk is taken next time.
  std::uint32_t chunk = 0;
  for (int i = 0; i < 50; ++i) {
    storage s;
    const auto* p = s.allocate<directive>(3);
    const std::uint32_t off = detail::region_offset(p);
    if (i == 0)
      chunk = off;
    else
      REQUIRE(off == chunk);
  }
}

TEST_CASE("records are refused when made from memory no storage owns") {
  const std::string outside = "a value the heap holds, longer than the small-string buffer";
  CHECK_THROWS_AS(argument::literal(outside), std::logic_error);
  CHECK_THROWS_AS(name_ref(std::string_view(outside)), std::logic_error);
  directive d{};
  CHECK_THROWS_AS(list<directive>(&d, 1), std::logic_error);
  CHECK(detail::region_offset(nullptr) == 0);
  CHECK(list<directive>().empty());
}

TEST_CASE("a directive's name reads like a string_view") {
  const parsed_buffer b =
      parse_buffer("server_name example.com;\n\"ser\\\"ver\" x;\n", "t.conf", 0);
  REQUIRE(b.size() == 2);
  const name_ref n = b[0].name;
  CHECK(n == "server_name");
  CHECK("server_name" == n);
  CHECK(n == std::string("server_name"));
  CHECK(n != "server");
  CHECK(n < std::string_view("t"));
  CHECK(n.starts_with("server_"));
  CHECK(n.ends_with("_name"));
  CHECK(n.substr(7) == "name");
  CHECK(n.find('_') == 6);
  CHECK(std::string(n) == "server_name");
  CHECK(n.size() == 11);
  // A quoted, escaped name is unescaped and kept in storage (not in the file's bytes).
  CHECK(b[1].name == "ser\"ver");
  CHECK(b[1].name != b[0].name);
  CHECK(b[0].args[0].value() == "example.com");
  CHECK(b[0].args[0].raw() == "example.com");
}
