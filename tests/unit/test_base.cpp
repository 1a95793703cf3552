#include <doctest/doctest.h>

#include "base/error.hpp"

TEST_CASE("input_error formats file:line:col before nginx's message") {
  ngxtls::input_error e({"/etc/nginx/nginx.conf", 12, 5}, "unexpected \"}\"");
  CHECK(std::string(e.what()) == "/etc/nginx/nginx.conf:12:5: unexpected \"}\"");
  CHECK(ngxtls::to_string({"a.conf", 3, 0}) == "a.conf:3");
  CHECK(ngxtls::to_string({"a.conf", 0, 0}) == "a.conf");
}
