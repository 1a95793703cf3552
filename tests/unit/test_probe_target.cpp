#include <doctest/doctest.h>

#include "base/error.hpp"
#include "probe/prober.hpp"
#include "probe/target.hpp"

using ngxtls::probe::parse_target;

TEST_CASE("probe targets: host, host:port, [v6]:port, https URL, --sni and --connect") {
  auto a = parse_target("example.com");
  CHECK(a.host == "example.com");
  CHECK(a.port == 443);
  CHECK(a.sni == "example.com");
  auto b = parse_target("example.com:8443");
  CHECK(b.port == 8443);
  CHECK(b.connect_host == "example.com");
  auto c = parse_target("[::1]:8443");
  CHECK(c.host == "::1");
  CHECK(c.port == 8443);
  CHECK(c.sni.empty());  // no SNI for an IP literal (RFC 6066)
  auto d = parse_target("https://api.example.com:9443/health");
  CHECK(d.host == "api.example.com");
  CHECK(d.port == 9443);
  auto e = parse_target("https://api.example.com/");
  CHECK(e.port == 443);
  auto f = parse_target("127.0.0.1:8443", std::string("localhost"));
  CHECK(f.sni == "localhost");
  auto g = parse_target("api.example.com", std::nullopt, std::string("10.0.0.7"));
  CHECK(g.connect_host == "10.0.0.7");
  CHECK(g.connect_port == 443);
  CHECK(g.sni == "api.example.com");
  auto h = parse_target("api.example.com:8443", std::nullopt, std::string("[fd00::1]:9443"));
  CHECK(h.connect_host == "fd00::1");
  CHECK(h.connect_port == 9443);
  CHECK(parse_target("::1").host == "::1");
  CHECK_THROWS_AS(parse_target("host:0"), ngxtls::usage_error);
  CHECK_THROWS_AS(parse_target("host:65536"), ngxtls::usage_error);
  CHECK_THROWS_AS(parse_target("http://host/"), ngxtls::usage_error);
  CHECK_THROWS_AS(parse_target(":443"), ngxtls::usage_error);
  CHECK_THROWS_AS(parse_target("bad:port:x"), ngxtls::usage_error);  // not IPv6, not host:port
  CHECK(parse_target("fe80::1%eth0").host == "fe80::1%eth0");
  // User info is refused without echoing it: the error may land in a CI log.
  for (const std::string bad : {"https://user:hunter2@127.0.0.1:8443/", "user:hunter2@127.0.0.1"}) {
    std::string what;
    try {
      parse_target(bad);
    } catch (const ngxtls::usage_error& e) {
      what = e.what();
    }
    CAPTURE(what);
    CHECK(what.find("user info (user:password@) is not supported") != std::string::npos);
    CHECK(what.find("hunter2") == std::string::npos);
    CHECK(what.find("@127.0.0.1") != std::string::npos);
  }
}

TEST_CASE("handshake time summaries use the nearest-rank median and p90") {
  auto t = ngxtls::probe::summarize_ms({5, 1, 4, 2, 3, 6, 7, 8, 9, 10});
  CHECK(t.count == 10);
  CHECK(t.median == 5);
  CHECK(t.p90 == 9);
  CHECK(ngxtls::probe::summarize_ms({}).count == 0);
}
