#include <doctest/doctest.h>

#include "base/error.hpp"

TEST_CASE("input_error formats file:line:col before nginx's message") {
  ngxtls::input_error e({"/etc/nginx/nginx.conf", 12, 5}, "unexpected \"}\"");
  CHECK(std::string(e.what()) == "/etc/nginx/nginx.conf:12:5: unexpected \"}\"");
  CHECK(ngxtls::to_string({"a.conf", 3, 0}) == "a.conf:3");
  CHECK(ngxtls::to_string({"a.conf", 0, 0}) == "a.conf");
}

TEST_CASE("file_path: copies share one string and compare, order and hash as the string") {
  const ngxtls::file_path a(std::string("/etc/nginx/sites-enabled/a.conf"));
  const ngxtls::file_path copy = a;
  CHECK(copy.same_string(a));
  CHECK(copy.identity() == a.identity());
  const ngxtls::file_path other("/etc/nginx/sites-enabled/a.conf");  // made apart: not shared
  CHECK_FALSE(other.same_string(a));
  CHECK(other == a);
  CHECK((other <=> a) == std::strong_ordering::equal);
  const ngxtls::file_path b("/etc/nginx/sites-enabled/b.conf");
  CHECK(a < b);
  CHECK(b > a);
  CHECK(a != b);
  CHECK(a == std::string("/etc/nginx/sites-enabled/a.conf"));
  CHECK(a == "/etc/nginx/sites-enabled/a.conf");
  CHECK(a + ":3" == "/etc/nginx/sites-enabled/a.conf:3");
  CHECK("at " + a == "at /etc/nginx/sites-enabled/a.conf");
  CHECK(std::hash<ngxtls::file_path>{}(a) ==
        std::hash<std::string>{}("/etc/nginx/sites-enabled/a.conf"));
  const ngxtls::file_path none;
  CHECK(none.empty());
  CHECK(none.str().empty());
  CHECK(none == ngxtls::file_path(std::string()));
  CHECK(none < a);
  // A location keeps its file's string: copying places copies no path bytes.
  const ngxtls::source_location at{a, 3, 1};
  const ngxtls::source_location at2 = at;
  CHECK(at2.file.same_string(a));
  CHECK(at2 == ngxtls::source_location{"/etc/nginx/sites-enabled/a.conf", 3, 1});
}
