#pragma once
// Test cases run once per slot of the nginx version matrix (scripts/nginx-versions.sh): the
// doctest side of support/nginx_versions.hpp, shared by the tests that measure nginx per version.

#include <doctest/doctest.h>

#include <iostream>

#include "support/nginx_versions.hpp"

namespace ngxtls::test {

/// The measured value for the version `v` runs: one per slot of the matrix.
template <class T>
T by_version(const nginx_version_entry& v, T v122, T v126, T v130) {
  if (v.slot == "1.22") return v122;
  if (v.slot == "1.26") return v126;
  return v130;
}

/// Runs `fn` on the matrix slot's nginx, or prints NGXTLS_SKIP with the script's reason.
inline void on_version(const char* slot, void (*fn)(const nginx_version_entry&)) {
  auto v = nginx_version_for(slot);
  if (v.status == "skip") {
    std::cout << "NGXTLS_SKIP: nginx " << v.version << ": " << v.note << std::endl;
    return;
  }
  REQUIRE_MESSAGE(v.status == "ok", "nginx " << v.version << ": " << v.note);
  std::cout << "measured on nginx " << v.version << " (" << v.binary << "; " << v.note << ")"
            << std::endl;
  INFO("nginx ", v.version, " (", v.note, ")");
  fn(v);
}

}  // namespace ngxtls::test

/// One test case per slot of the matrix, each running `fn` on that slot's nginx: a version that
/// is absent here skips alone.
#define NGINX_VERSION_CASES(title, fn)                  \
  TEST_CASE(title " (nginx 1.22.1 Debian)") {           \
    ::ngxtls::test::on_version("1.22", fn);             \
  }                                                     \
  TEST_CASE(title " (nginx 1.26.3)") {                  \
    ::ngxtls::test::on_version("1.26", fn);             \
  }                                                     \
  TEST_CASE(title " (nginx 1.30.x with OpenSSL 3.6)") { \
    ::ngxtls::test::on_version("1.30", fn);             \
  }
