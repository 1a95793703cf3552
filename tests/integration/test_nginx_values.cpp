// nginx's value syntax (config/values.hpp) against real nginx binaries of the version matrix:
// every time, size, offset and port value is given to `nginx -t` in a directive of that slot
// type, and nginx must accept exactly the values the parser reads; quoted tokens must reach
// nginx as the text quoted; server names must select the servers nginx selects for a Host
// name (the same lookup nginx does for SNI, ngx_http_find_virtual_server); nginx's own log
// lines must parse to the file and line nginx names.

#include <doctest/doctest.h>

#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "config/values.hpp"
#include "support/nginx_instance.hpp"
#include "support/nginx_run.hpp"
#include "support/nginx_versions.hpp"
#include "support/process.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

/// `nginx -t` of an nginx.conf whose http block is `http_body`, in a fresh prefix.
command_result nginx_t(const nginx_version_entry& v, const std::string& http_body,
                       std::string* conf_path = nullptr) {
  temp_dir d;
  d.write("nginx.conf", nginx_conf(1, http_body));
  const std::string p = d.path().string() + "/";
  if (conf_path) *conf_path = p + "nginx.conf";
  return run_nginx({v.binary, "-t", "-p", p, "-c", p + "nginx.conf"}, "", 30);
}

/// Whether nginx -t accepts `directive "VALUE";` in http{}.
bool accepts(const nginx_version_entry& v, const std::string& directive, const std::string& value,
             const std::string& before = "", const std::string& after = "") {
  const auto r = nginx_t(v, directive + " " + config::quote_token(before + value + after) + ";");
  return r.exit_code == 0;
}

/// The installed slots of the version matrix (those the script could install here).
std::vector<nginx_version_entry> installed() {
  std::vector<nginx_version_entry> out;
  for (const char* slot : {"1.22", "1.26", "1.30"}) {
    auto v = nginx_version_for(slot);
    if (v.status == "ok")
      out.push_back(v);
    else
      std::cout << "NGXTLS_SKIP: nginx " << v.version << ": " << v.note << std::endl;
  }
  return out;
}

}  // namespace

TEST_CASE("time values: nginx -t accepts exactly what parse_time_s and parse_time_ms read") {
  const std::vector<std::string> values = {"300",
                                           "5m",
                                           "1h30m",
                                           "1h 30m",
                                           "1h  30m",
                                           "1y",
                                           "1M",
                                           "2w",
                                           "1d12h",
                                           "1y1M1w1d1h1m1s",
                                           "1m1h",
                                           "1h1h",
                                           "5x",
                                           "",
                                           "s",
                                           "1ms",
                                           "500ms",
                                           "1s500ms",
                                           "1 2",
                                           "1h30",
                                           " 5m",
                                           "5m ",
                                           "1M1y",
                                           "9223372036854775807",
                                           "9223372036854775808",
                                           "106751991167300d",
                                           "1y ",
                                           "m",
                                           "1 m",
                                           "01",
                                           "1S",
                                           "1H"};
  for (const auto& v : installed()) {
    INFO("nginx ", v.version);
    for (const auto& value : values) {
      CAPTURE(value);
      CHECK(accepts(v, "ssl_session_timeout", value) == config::parse_time_s(value).has_value());
      CHECK(accepts(v, "send_timeout", value) == config::parse_time_ms(value).has_value());
    }
  }
  // The values themselves, from nginx's units (ngx_parse_time: y 365 days, M 30 days).
  CHECK(config::parse_time_s("1h30m") == 5400);
  CHECK(config::parse_time_s("1h 30m") == 5400);
  CHECK(config::parse_time_s("1h30") == 3630);
  CHECK(config::parse_time_s("1y") == 365 * 86400);
  CHECK(config::parse_time_s("1M") == 30 * 86400);
  CHECK(config::parse_time_s("2w") == 14 * 86400);
  CHECK(config::parse_time_s("300") == 300);
  CHECK(config::parse_time_ms("1s500ms") == 1500);
  CHECK(config::parse_time_ms("60") == 60000);
  CHECK(config::parse_time_ms("1m") == 60000);
  CHECK_FALSE(config::parse_time_s("1ms"));
  CHECK_FALSE(config::parse_time_ms("1y"));
}

TEST_CASE(
    "size and offset values: nginx -t accepts exactly what parse_size_bytes and "
    "parse_offset_bytes read") {
  const std::vector<std::string> values = {"16k",
                                           "16K",
                                           "1m",
                                           "1M",
                                           "1g",
                                           "1G",
                                           "4096",
                                           "",
                                           "k",
                                           "1 k",
                                           "-1",
                                           "1.5k",
                                           "1kb",
                                           "0",
                                           "01k",
                                           "9223372036854775807",
                                           "9223372036854775808",
                                           "8796093022208m",
                                           "8796093022207m"};
  for (const auto& v : installed()) {
    INFO("nginx ", v.version);
    for (const auto& value : values) {
      CAPTURE(value);
      CHECK(accepts(v, "ssl_buffer_size", value) == config::parse_size_bytes(value).has_value());
      CHECK(accepts(v, "client_max_body_size", value) ==
            config::parse_offset_bytes(value).has_value());
    }
    // The size of a shared session cache is read by ngx_parse_size too (at least 8 pages).
    for (const std::string size : {"1m", "1M", "64k", "1g", "10mb"}) {
      CAPTURE(size);
      CHECK(accepts(v, "ssl_session_cache", size, "shared:S:") ==
            config::parse_size_bytes(size).has_value());
    }
  }
  CHECK(config::parse_size_bytes("16k") == 16384);
  CHECK(config::parse_size_bytes("1M") == 1048576);
  CHECK(config::parse_offset_bytes("2G") == 2147483648LL);
  CHECK_FALSE(config::parse_size_bytes("1g"));
}

TEST_CASE("ports: nginx -t accepts exactly the listen ports parse_port reads") {
  for (const auto& v : installed()) {
    INFO("nginx ", v.version);
    for (const std::string port : {"1", "443", "65535", "65536", "0", "08443", "0000443", "-1",
                                   "44a", "99999999999999999999"}) {
      CAPTURE(port);
      const auto r = nginx_t(v, "server { listen 127.0.0.1:" + port + "; }");
      CHECK((r.exit_code == 0) == config::parse_port(port).has_value());
    }
  }
  CHECK(config::parse_port("08443") == 8443);
  CHECK(config::port_of_address("127.0.0.1:8443") == 8443);
  CHECK(config::port_of_address("[::1]:443") == 443);
  CHECK(config::port_of_address("example.com") == 0);
}

TEST_CASE(
    "quote_token: nginx reads the quoted token back as the text, and nginx's log lines "
    "parse to nginx's file and line") {
  for (const auto& v : installed()) {
    INFO("nginx ", v.version);
    for (const std::string name :
         {"/nonexistent/plain", "/nonexistent/sp ace", "/nonexistent/q\"uote", "/nonexistent/b\\s",
          "/nonexistent/semi;{brace}#hash", "/nonexistent/single'q", "/nonexistent/tab\tx"}) {
      CAPTURE(name);
      std::string conf;
      // include opens the file as nginx read the token: its [emerg] quotes the name.
      const std::string body = "\n\ninclude " + config::quote_token(name) + ";";
      const auto r = nginx_t(v, body, &conf);
      CHECK(r.exit_code != 0);
      std::optional<config::nginx_log_line> emerg;
      std::istringstream lines(r.err);
      for (std::string l; std::getline(lines, l);)
        if (auto p = config::parse_nginx_log_line(l); p && p->level == "emerg") emerg = p;
      REQUIRE(emerg);
      CHECK(emerg->message.find("open() \"" + name + "\" failed") == 0);
      CHECK(emerg->file == conf);
      std::istringstream text(nginx_conf(1, body));
      std::uint32_t n = 0, include_line = 0;
      for (std::string l; std::getline(text, l);)
        if (++n && l.find("include ") != std::string::npos) include_line = n;
      REQUIRE(include_line > 0);
      CHECK(emerg->line == include_line);
    }
  }
  CHECK(config::token_for_reading("/etc/nginx/a.pem") == "/etc/nginx/a.pem");
  CHECK(config::token_for_reading("/etc/nginx/a b.pem") == "\"/etc/nginx/a b.pem\"");
  CHECK(config::token_for_reading("") == "\"\"");
  const auto warn = config::parse_nginx_log_line(
      "2026/12/02 00:45:01 [warn] 1234#1234: the \"ssl\" directive is deprecated, use the "
      "\"listen ... ssl\" directive instead in /etc/nginx/nginx.conf:12");
  REQUIRE(warn);
  CHECK(warn->level == "warn");
  CHECK(warn->message ==
        "the \"ssl\" directive is deprecated, use the \"listen ... ssl\" directive instead");
  CHECK(warn->file == "/etc/nginx/nginx.conf");
  CHECK(warn->line == 12);
  CHECK_FALSE(config::parse_nginx_log_line("nginx: configuration file /x test failed"));
}

TEST_CASE(
    "name_selecting: a name its server_name selects, none for a star nginx refuses as a "
    "wildcard") {
  for (const std::string pattern :
       {"*.example.com", ".example.com", "www.example.*", "www.example.com", "Mixed.Example.COM"}) {
    CAPTURE(pattern);
    const auto name = config::name_selecting(pattern);
    REQUIRE(name);
    CHECK(name->find('*') == std::string::npos);
    CHECK(config::server_name_matches(pattern, *name));
  }
  CHECK(config::name_selecting("*.example.com") == "ngxtls-probe.example.com");
  CHECK(config::name_selecting(".example.com") == "example.com");
  CHECK(config::name_selecting("www.example.*") == "www.example.test");
  for (const std::string pattern :
       {"", "_", "~^a\\.example$", "$host", "a*b", "*.a*b", "www.*.com", "*.example.*"})
    CHECK_FALSE(config::name_selecting(pattern));
  // nginx refuses each star that is not a wildcard once two servers share the address.
  for (const auto& v : installed()) {
    INFO("nginx ", v.version);
    for (const std::string pattern : {"a*b", "*.a*b", "www.*.com", "*.example.*"}) {
      CAPTURE(pattern);
      const auto r = nginx_t(v,
                             "server { listen 127.0.0.1:1; }\nserver { listen 127.0.0.1:1; "
                             "server_name " +
                                 pattern + "; }");
      CHECK(r.exit_code != 0);
      CHECK(r.err.find("invalid server name or wildcard \"" + pattern + "\"") != std::string::npos);
    }
    for (const std::string pattern : {"*.example.com", ".example.com", "www.example.*"}) {
      CAPTURE(pattern);
      CHECK(nginx_t(v,
                    "server { listen 127.0.0.1:1; }\nserver { listen 127.0.0.1:1; "
                    "server_name " +
                        pattern + "; }")
                .exit_code == 0);
    }
  }
}

TEST_CASE("server_name_matches: nginx selects the server for a Host name as it says") {
  struct example {
    std::string pattern, host;
    bool selects;  // from nginx's docs (http/server_names.html), then measured below
  };
  const std::vector<example> examples = {
      {"www.example.com", "www.example.com", true},
      {"www.example.com", "WWW.Example.COM", true},
      {"www.example.com", "example.com", false},
      {"*.example.com", "a.example.com", true},
      {"*.example.com", "a.b.example.com", true},
      {"*.example.com", "example.com", false},
      {".example.com", "example.com", true},
      {".example.com", "a.example.com", true},
      {".example.com", "badexample.com", false},
      {"www.example.*", "www.example.org", true},
      {"www.example.*", "www.example.co.uk", true},
      {"www.example.*", "www.example", false},
      {"~^w\\d+\\.example\\.net$", "w12.example.net", true},
      {"~^W\\d+\\.EXAMPLE\\.net$", "w12.example.net", true},
      {"~^w\\d+\\.example\\.net$", "www.example.net", false},
      {"~example", "foo.example.org", true},
      {"~^(?<sub>[a-z]+)\\.example\\.org$", "abc.example.org", true},
  };
  for (const auto& e : examples) {
    CAPTURE(e.pattern);
    CAPTURE(e.host);
    CHECK(config::server_name_matches(e.pattern, e.host) == e.selects);
  }
  for (const auto& v : installed()) {
    INFO("nginx ", v.version);
    // One port per example: a default server answering "default" and the named one "named".
    std::string body;
    std::vector<int> ports;
    for (const auto& e : examples) {
      const int port = free_port();
      ports.push_back(port);
      const std::string listen = "listen 127.0.0.1:" + std::to_string(port);
      body += "server { " + listen + " default_server; return 200 default; }\n";
      body += "server { " + listen + "; server_name " + config::quote_token(e.pattern) +
              "; return 200 named; }\n";
    }
    nginx_options o;
    o.binary = v.binary;
    o.wait_ports = ports;
    nginx_instance nginx(nginx_conf(1, body), o);
    for (std::size_t i = 0; i < examples.size(); ++i) {
      const auto& e = examples[i];
      CAPTURE(e.pattern);
      CAPTURE(e.host);
      const auto r = run({"curl", "-s", "--max-time", "10", "-H", "Host: " + e.host,
                          "http://127.0.0.1:" + std::to_string(ports[i]) + "/"});
      REQUIRE(r.exit_code == 0);
      CHECK((r.out == "named") == config::server_name_matches(e.pattern, e.host));
    }
  }
}
