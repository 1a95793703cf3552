// The header fields the prober keeps from its HEAD / response.
#include <doctest/doctest.h>

#include "probe/modules/headers.hpp"

using namespace ngxtls;

TEST_CASE("a response head gives its header fields in order, names as sent, values trimmed") {
  const auto h = probe::parse_response_head(
      "HTTP/1.1 200 OK\r\nServer: nginx\r\nStrict-Transport-Security:  max-age=300 \r\n"
      "X-Empty:\r\n\r\nbody: not a header\r\n");
  REQUIRE(h.size() == 3);
  CHECK(h[0] == std::pair<std::string, std::string>{"Server", "nginx"});
  CHECK(h[1] == std::pair<std::string, std::string>{"Strict-Transport-Security", "max-age=300"});
  CHECK(h[2] == std::pair<std::string, std::string>{"X-Empty", ""});
  CHECK(probe::header_value(h, "strict-transport-security") == "max-age=300");
  CHECK_FALSE(probe::header_value(h, "Strict-Transport").has_value());
}

TEST_CASE("lines without a colon and folded continuations are no header fields") {
  const auto h = probe::parse_response_head(
      "HTTP/1.1 200 OK\nno colon here\n: no name\nX-A: 1\n folded continuation\n\n");
  REQUIRE(h.size() == 1);
  CHECK(h[0].first == "X-A");
  CHECK(probe::parse_response_head("").empty());
  CHECK(probe::parse_response_head("HTTP/1.1 200 OK\r\n").empty());
}
