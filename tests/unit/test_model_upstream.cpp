// The upstream TLS model: which passes are TLS, nginx's inheritance of the proxy_ssl_* settings
// (http -> server -> location -> nested location / if; stream -> server), the upstream block a
// target names, the Connection header and HTTP version sent, variables and the backend's reach.

#include <doctest/doctest.h>

#include "config/loader.hpp"
#include "model/model.hpp"

using namespace ngxtls;

namespace {

struct built {
  config::config cfg;
  model::model m;
};

std::unique_ptr<built> build(const std::string& text, const std::string& nginx = "1.22.1") {
  auto src = config::make_memory_source({{"/etc/nginx/nginx.conf", text}});
  auto b = std::make_unique<built>();
  b->cfg = config::load("/etc/nginx/nginx.conf", *src);
  model::assumed_versions v;
  v.nginx = *model::version::parse(nginx);
  b->m = model::build(b->cfg, v);
  return b;
}

std::vector<std::string> strings(const model::upstream_setting* s) {
  REQUIRE(s);
  return {s->args.begin(), s->args.end()};
}

}  // namespace

TEST_CASE("only TLS targets are upstream TLS: https, grpcs and suwsgi, in any letter case") {
  auto b = build(R"(
http {
  server {
    listen 80;
    location /a { proxy_pass https://10.0.0.1:8443/x; }
    location /b { proxy_pass http://10.0.0.1; }
    location /c { grpc_pass grpcs://10.0.0.2:50051; }
    location /d { grpc_pass grpc://10.0.0.2:50051; }
    location /e { uwsgi_pass suwsgi://10.0.0.3:3031; }
    location /f { uwsgi_pass 10.0.0.3:3031; }
    location /g { proxy_pass HTTPS://10.0.0.4; }
    location /h { proxy_pass $target; }
  }
}
)");
  const auto& u = b->m.tls_upstreams;
  REQUIRE(u.size() == 4);
  CHECK(u[0].module == model::upstream_module::proxy);
  CHECK(u[0].host == "10.0.0.1");
  CHECK(u[0].port == 8443);
  CHECK(u[0].pass->line == 5);
  CHECK(u[0].location->line == 5);
  CHECK(u[1].module == model::upstream_module::grpc);
  CHECK(u[1].http_version == "2");
  CHECK(u[2].module == model::upstream_module::uwsgi);
  CHECK(u[2].http_version.empty());
  CHECK(u[2].directive("ssl_verify") == "uwsgi_ssl_verify");
  CHECK(u[3].host == "10.0.0.4");
}

TEST_CASE("upstream TLS settings inherit http, server, location, nested location and if") {
  auto b = build(R"(
http {
  proxy_ssl_protocols TLSv1.2;
  proxy_ssl_verify on;
  proxy_ssl_conf_command Options -SessionTicket;
  proxy_ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;
  server {
    listen 80;
    proxy_ssl_server_name on;
    location /a {
      proxy_ssl_protocols TLSv1.3;
      proxy_pass https://a.internal;
      location /a/b {
        proxy_ssl_conf_command Options PrioritizeChaCha;
        proxy_pass https://b.internal;
      }
      if ($arg_x) {
        proxy_ssl_verify off;
        proxy_pass https://c.internal;
      }
    }
    location @named { proxy_pass https://d.internal; }
  }
}
)");
  const auto& u = b->m.tls_upstreams;
  REQUIRE(u.size() == 4);
  // location /a: its own protocols, the server's SNI, http's verify and conf commands.
  CHECK(strings(u[0].get("ssl_protocols")) == std::vector<std::string>{"TLSv1.3"});
  CHECK(u[0].get("ssl_protocols")->where()->line == 11);
  CHECK(u[0].get("ssl_protocols")->level->name == "location");
  CHECK(u[0].get("ssl_server_name")->first() == "on");
  CHECK(u[0].get("ssl_server_name")->level->name == "server");
  CHECK(u[0].get("ssl_verify")->level->name == "http");
  CHECK(u[0].get("ssl_conf_command")->occurrences.size() == 2);
  // The nested location inherits /a's protocols; its one conf command replaces http's two.
  CHECK(u[1].host == "b.internal");
  CHECK(strings(u[1].get("ssl_protocols")) == std::vector<std::string>{"TLSv1.3"});
  REQUIRE(u[1].get("ssl_conf_command")->occurrences.size() == 1);
  CHECK(u[1].get("ssl_conf_command")->where()->line == 14);
  // `if` in a location inherits the location and sets its own.
  CHECK(u[2].host == "c.internal");
  CHECK(u[2].get("ssl_verify")->first() == "off");
  CHECK(u[2].get("ssl_verify")->level->name == "if");
  CHECK(strings(u[2].get("ssl_protocols")) == std::vector<std::string>{"TLSv1.3"});
  // A named location: the server's and http's.
  CHECK(u[3].host == "d.internal");
  CHECK(strings(u[3].get("ssl_protocols")) == std::vector<std::string>{"TLSv1.2"});
}

TEST_CASE("nginx's defaults of the upstream TLS settings, by version") {
  const std::string conf =
      "http { server { listen 80; location / { proxy_pass https://10.1.1.1; } } }";
  auto old = build(conf, "1.22.1");
  REQUIRE(old->m.tls_upstreams.size() == 1);
  const auto& u = old->m.tls_upstreams[0];
  CHECK(strings(u.get("ssl_protocols")) == std::vector<std::string>{"TLSv1", "TLSv1.1", "TLSv1.2"});
  CHECK(u.get("ssl_protocols")->is_default());
  CHECK(u.get("ssl_session_reuse")->first() == "on");
  CHECK(u.get("ssl_verify")->first() == "off");
  CHECK(u.get("ssl_server_name")->first() == "off");
  CHECK(u.get("ssl_verify_depth")->first() == "1");
  CHECK(u.get("ssl_ciphers")->first() == "DEFAULT");
  CHECK(u.get("ssl_trusted_certificate")->args.empty());
  CHECK(u.http_version == "1.0");
  CHECK(u.connection_header == "close");
  CHECK(u.connection_where == nullptr);
  CHECK(u.ssl_name() == "10.1.1.1");
  auto mid = build(conf, "1.26.3");
  CHECK(strings(mid->m.tls_upstreams[0].get("ssl_protocols")) ==
        std::vector<std::string>{"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"});
  auto now = build(conf, "1.30.6");
  CHECK(strings(now->m.tls_upstreams[0].get("ssl_protocols")) ==
        std::vector<std::string>{"TLSv1.2", "TLSv1.3"});
}

TEST_CASE("the Connection header: a level with any proxy_set_header replaces the inherited set") {
  auto b = build(R"(
http {
  proxy_set_header Connection "";
  proxy_http_version 1.1;
  server {
    listen 80;
    location /a { proxy_pass https://x.internal; }
    location /b { proxy_set_header Host $host; proxy_pass https://x.internal; }
    location /c { proxy_set_header connection $connection_upgrade; proxy_pass https://x.internal; }
    location /d { proxy_http_version 1.0; proxy_pass https://x.internal; }
  }
}
)");
  const auto& u = b->m.tls_upstreams;
  REQUIRE(u.size() == 4);
  CHECK(u[0].connection_header.empty());
  CHECK(u[0].connection_where->line == 3);
  CHECK(u[0].http_version == "1.1");
  // /b sets Host only: http's Connection "" is dropped, nginx sends its own close.
  CHECK(u[1].connection_header == "close");
  CHECK(u[1].connection_where == nullptr);
  CHECK(u[2].connection_header == "$connection_upgrade");
  CHECK(u[2].connection_variable);
  CHECK(u[3].http_version == "1.0");
  CHECK(u[3].get("http_version")->where()->line == 10);
}

TEST_CASE("the upstream block a target names: by host without a port, case-insensitively") {
  auto b = build(R"(
http {
  upstream Api {
    zone api 64k;
    server 10.0.0.5:443 max_fails=3;
    server api2.internal:443 backup;
    keepalive 16;
    keepalive_requests 500;
    keepalive_timeout 30s;
  }
  upstream local { server 127.0.0.1:8443; server unix:/run/app.sock; }
  upstream sockets { server unix:/run/a.sock; }
  server {
    listen 80;
    location /a { proxy_pass https://api/v1; }
    location /b { proxy_pass https://local; }
    location /c { proxy_pass https://sockets; }
    location /d { proxy_pass https://localhost:8443; }
    location /e { proxy_pass https://unix:/run/x.sock:/; }
    location /f { proxy_pass https://[::1]:8443; }
    location /g { proxy_pass https://[2001:db8::1]; }
  }
}
)");
  REQUIRE(b->m.upstreams.size() == 3);
  const auto& api = b->m.upstreams[0];
  CHECK(api.name == "Api");
  CHECK(api.servers == std::vector<std::string>{"10.0.0.5:443", "api2.internal:443"});
  CHECK(api.keepalive == 16);
  CHECK(api.keepalive_where->line == 7);
  CHECK(api.keepalive_requests == 500);
  CHECK(api.keepalive_timeout_ms == 30000);
  CHECK(api.zone_where->line == 4);
  CHECK(api.reach == model::backend_reach::network);
  CHECK(b->m.upstreams[1].reach == model::backend_reach::loopback);
  CHECK(b->m.upstreams[2].reach == model::backend_reach::unix_socket);
  const auto& u = b->m.tls_upstreams;
  REQUIRE(u.size() == 7);
  CHECK(u[0].block == 0u);
  CHECK(u[0].reach == model::backend_reach::network);
  CHECK(u[1].block == 1u);
  CHECK(u[1].reach == model::backend_reach::loopback);
  CHECK(u[2].reach == model::backend_reach::unix_socket);
  CHECK(!u[3].block);
  CHECK(u[3].reach == model::backend_reach::loopback);
  CHECK(u[4].reach == model::backend_reach::unix_socket);
  CHECK(u[5].reach == model::backend_reach::loopback);
  CHECK(u[5].host == "::1");
  CHECK(u[6].reach == model::backend_reach::network);
}

TEST_CASE(
    "variables in the target: per request, a literal set is followed, a variable host is "
    "unknown") {
  auto b = build(R"(
http {
  upstream pool { server 10.0.0.9:443; }
  server {
    listen 80;
    set $up https://backend.example.net;
    location /a { proxy_pass $up$request_uri; }
    location /b { proxy_pass https://$host; }
    location /c { proxy_pass https://pool$request_uri; }
    location /d { set $up http://plain.example.net; proxy_pass $up; }
  }
}
)");
  const auto& u = b->m.tls_upstreams;
  REQUIRE(u.size() == 3);
  CHECK(u[0].has_variables);
  CHECK(u[0].resolved_target == "https://backend.example.net$request_uri");
  CHECK(u[0].host == "backend.example.net");
  CHECK(!u[0].block);
  CHECK(u[0].reach == model::backend_reach::network);
  CHECK(u[1].host.empty());
  CHECK(u[1].reach == model::backend_reach::unknown);
  CHECK(u[2].has_variables);
  CHECK(u[2].block == 0u);
}

TEST_CASE("stream proxy_pass is upstream TLS only with proxy_ssl on, inherited from stream") {
  auto b = build(R"(
stream {
  upstream db { server 10.0.0.7:5432; }
  proxy_ssl_verify on;
  server { listen 5432; proxy_pass db; proxy_ssl on; }
  server { listen 5433; proxy_pass 10.0.0.8:5432; }
  server { listen 5434; proxy_ssl on; proxy_ssl_verify off; proxy_pass backend.example.net:5432; }
}
http {
  upstream db { server 127.0.0.1:1; }
}
)");
  const auto& u = b->m.tls_upstreams;
  REQUIRE(u.size() == 2);
  CHECK(u[0].context == model::context_kind::stream);
  CHECK(u[0].block == 0u);  // the stream block's, not http's
  CHECK(u[0].reach == model::backend_reach::network);
  CHECK(u[0].get("ssl_verify")->first() == "on");
  CHECK(u[0].get("ssl_verify")->level->name == "stream");
  CHECK(u[0].http_version.empty());
  CHECK(u[1].host == "backend.example.net");
  CHECK(u[1].port == 5432);
  CHECK(u[1].get("ssl_verify")->first() == "off");
}

TEST_CASE("addresses: host names, literals and reach") {
  CHECK(model::is_host_name("api.example.com"));
  CHECK(model::is_host_name("backend"));
  CHECK(!model::is_host_name("10.0.0.1"));
  CHECK(!model::is_host_name("::1"));
  CHECK(!model::is_host_name("$host"));
  CHECK(model::reach_of_address("127.0.0.2:443") == model::backend_reach::loopback);
  CHECK(model::reach_of_address("LocalHost") == model::backend_reach::loopback);
  CHECK(model::reach_of_address("app.localhost:80") == model::backend_reach::loopback);
  CHECK(model::reach_of_address("192.168.1.1") == model::backend_reach::network);
  CHECK(model::reach_of_address("[::1]:443") == model::backend_reach::loopback);
  CHECK(model::reach_of_address("[fe80::1]:443") == model::backend_reach::network);
  CHECK(model::reach_of_address("unix:/tmp/s") == model::backend_reach::unix_socket);
  CHECK(model::reach_of_address("$backend") == model::backend_reach::unknown);
}

TEST_CASE("a Connection header from a map: what requests without an Upgrade header get") {
  auto b = build(R"(
http {
  map $http_upgrade $ws_close { default upgrade; '' close; }
  map $http_upgrade $ws_keep { default upgrade; "" ""; }
  map $http_upgrade $no_empty_key { default close; websocket upgrade; }
  map $http_upgrade $implicit_default { websocket upgrade; }
  map $http_upgrade $regex { ~^$ close; default upgrade; }
  map $http_upgrade $exact_before_regex { ~.* close; '' ''; default upgrade; }
  map $http_connection $other_source { default close; keep-alive keep-alive; }
  map $host $one_value { default close; a.example close; }
  map $http_upgrade $with_variable { default $http_upgrade; '' close; }
  map $http_upgrade $included { volatile; default upgrade; }
  server {
    listen 80;
    location /1 { proxy_set_header Connection $ws_close; proxy_pass https://b; }
    location /2 { proxy_set_header Connection $ws_keep; proxy_pass https://b; }
    location /3 { proxy_set_header Connection $no_empty_key; proxy_pass https://b; }
    location /4 { proxy_set_header Connection $implicit_default; proxy_pass https://b; }
    location /5 { proxy_set_header Connection $regex; proxy_pass https://b; }
    location /6 { proxy_set_header Connection $exact_before_regex; proxy_pass https://b; }
    location /7 { proxy_set_header Connection $other_source; proxy_pass https://b; }
    location /8 { proxy_set_header Connection $one_value; proxy_pass https://b; }
    location /9 { proxy_set_header Connection $with_variable; proxy_pass https://b; }
    location /10 { proxy_set_header Connection $included; proxy_pass https://b; }
    location /11 { proxy_set_header Connection "$unmapped"; proxy_pass https://b; }
    location /12 { proxy_set_header Connection "x$ws_close"; proxy_pass https://b; }
  }
}
)");
  const auto& u = b->m.tls_upstreams;
  REQUIRE(u.size() == 12);
  auto plain = [&](std::size_t i) { return u[i].connection_for_plain_requests; };
  CHECK(plain(0) == std::optional<std::string>("close"));
  CHECK(u[0].connection_map->line == 3);
  CHECK(u[0].connection_map_entry->name.empty());
  CHECK(plain(1) == std::optional<std::string>(""));
  CHECK(plain(2) == std::optional<std::string>("close"));
  CHECK(u[2].connection_map_entry->name == "default");
  CHECK(plain(3) == std::optional<std::string>(""));  // no default: the empty string
  CHECK(u[3].connection_map_entry == nullptr);
  CHECK_FALSE(plain(4));  // a regular expression may match the empty value
  CHECK(plain(5) == std::optional<std::string>(""));  // exact strings are looked up first
  CHECK_FALSE(plain(6));                              // what a client sends decides
  CHECK(u[6].connection_map != nullptr);
  CHECK(plain(7) == std::optional<std::string>("close"));  // every entry gives close
  CHECK_FALSE(plain(8));
  CHECK(plain(9) == std::optional<std::string>("upgrade"));  // `volatile;` takes no value
  CHECK(u[10].connection_map == nullptr);
  CHECK_FALSE(plain(10));
  CHECK(u[11].connection_map == nullptr);
  CHECK_FALSE(plain(11));
}
