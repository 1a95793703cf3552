// The lint text report pinned byte for byte: `ngxtls lint` on fixtures/lint-text/nginx.conf
// (findings of each severity, a suppressed finding and a stale suppression, in a main file and
// an included one) against the golden file fixtures/lint-text/report.txt
// (tests/support/golden.hpp: NGXTLS_UPDATE_GOLDENS=1 rewrites it). The versions are given, so
// that no nginx on PATH changes the report.

#include <doctest/doctest.h>
#include <unistd.h>

#include <string>

#include "support/golden.hpp"
#include "support/process.hpp"

using namespace ngxtls;

TEST_CASE("the lint text report of fixtures/lint-text is the golden one") {
  // Run in the source tree with a relative path, so that the report's paths are the same on
  // every machine.
  const std::string source = test::source_dir().string();
  const auto r = test::run({test::ngxtls_binary(), "lint", "--nginx-version", "1.22.1",
                            "--openssl-version", "3.0.19", "fixtures/lint-text/nginx.conf"},
                           "", 120, [&] { return ::chdir(source.c_str()) == 0; });
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 1);  // errors among the findings
  const auto diff = test::golden_mismatch("fixtures/lint-text/report.txt", r.out);
  CHECK_MESSAGE(diff.empty(), diff);
}
