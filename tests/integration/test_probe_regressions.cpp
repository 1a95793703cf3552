// Regressions found by trying the tool as a new user.

#include <doctest/doctest.h>

#include "support/process.hpp"

using namespace ngxtls;

TEST_CASE("a host name that does not resolve ends the probe with exit 3, not a hang") {
  auto r = test::run({test::ngxtls_binary(), "probe", "nonexistent-host.invalid", "--timeout",
                      "1000", "--total-timeout", "2000"},
                     "", 90);
  CHECK(r.exit_code == 3);
  CHECK((r.out + r.err).find("nonexistent-host.invalid") != std::string::npos);
}

TEST_CASE("an empty stdin (a failed nginx -T) is an input error, never a clean lint") {
  auto r = test::run({test::ngxtls_binary(), "lint", "-", "--nginx-version", "1.22.1"}, "", 30);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("empty input") != std::string::npos);
}
