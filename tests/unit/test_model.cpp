// The model: nginx's merge rule, default servers, listen parsing and version defaults.

#include <doctest/doctest.h>

#include "config/loader.hpp"
#include "model/model.hpp"

using namespace ngxtls;

namespace {

struct built {
  config::config cfg;
  model::model m;
};

// Owns the config the model points into.
std::unique_ptr<built> build(const std::string& text, const std::string& nginx = "1.22.1") {
  auto src = config::make_memory_source({{"/etc/nginx/nginx.conf", text}});
  auto b = std::make_unique<built>();
  b->cfg = config::load("/etc/nginx/nginx.conf", *src);
  model::assumed_versions v;
  v.nginx = *model::version::parse(nginx);
  b->m = model::build(b->cfg, v);
  return b;
}

}  // namespace

TEST_CASE(
    "a server value wins over http, http over nginx's default, and each remembers its origin") {
  auto b = build(R"(
http {
  ssl_session_cache shared:SSL:10m;
  ssl_protocols TLSv1.2;
  server { listen 443 ssl; ssl_protocols TLSv1.3; }
  server { listen 444 ssl; }
}
)");
  REQUIRE(b->m.servers.size() == 2);
  const auto& s0 = b->m.servers[0];
  CHECK(s0.get("ssl_protocols")->args().strings() == std::vector<std::string>{"TLSv1.3"});
  CHECK(s0.get("ssl_protocols")->from == model::origin::server);
  CHECK(s0.get("ssl_protocols")->where()->line == 5);
  CHECK(s0.get("ssl_session_cache")->from == model::origin::inherited);
  CHECK(s0.get("ssl_session_cache")->where()->line == 3);
  CHECK(s0.get("ssl_session_tickets")->from == model::origin::nginx_default);
  CHECK(s0.get("ssl_session_tickets")->first() == "on");
  CHECK(s0.get("ssl_session_tickets")->where() == nullptr);
  const auto& s1 = b->m.servers[1];
  CHECK(s1.get("ssl_protocols")->args().strings() == std::vector<std::string>{"TLSv1.2"});
  CHECK(s1.get("ssl_protocols")->from == model::origin::inherited);
  CHECK(s1.get("ssl_session_ticket_key") == nullptr);
}

TEST_CASE("repeatable directives: the server's list replaces the http list whole") {
  auto b = build(R"(
http {
  ssl_session_ticket_key a.key;
  ssl_session_ticket_key b.key;
  server { listen 443 ssl; ssl_session_ticket_key c.key; }
  server { listen 443 ssl; server_name x; }
}
)");
  CHECK(b->m.servers[0].get("ssl_session_ticket_key")->values.size() == 1);
  CHECK(b->m.servers[0].get("ssl_session_ticket_key")->first() == "c.key");
  REQUIRE(b->m.servers[1].get("ssl_session_ticket_key")->values.size() == 2);
  CHECK(b->m.servers[1].get("ssl_session_ticket_key")->values[0].args[0] == "a.key");
}

TEST_CASE("the default server of a socket is the one marked default_server, else the first") {
  auto b = build(R"(
http {
  server { listen 443 ssl; server_name a; }
  server { listen 443 ssl default_server; server_name b; }
  server { listen 127.0.0.1:443 ssl; server_name c; }
  server { listen 8443 ssl; server_name d; }
  server { listen 8443; server_name e; }
}
)");
  REQUIRE(b->m.sockets.size() == 3);
  const auto& k443 = b->m.sockets[0];
  CHECK(k443.name() == "*:443");
  CHECK(k443.default_server == 1);
  CHECK(k443.default_marked);
  CHECK(k443.servers == std::vector<std::size_t>{0, 1});
  CHECK(b->m.sockets[1].name() == "127.0.0.1:443");
  CHECK(b->m.sockets[1].default_server == 2);
  const auto& k8443 = b->m.sockets[2];
  CHECK(k8443.default_server == 3);
  CHECK_FALSE(k8443.default_marked);
  CHECK(k8443.ssl);  // nginx ORs the ssl flag over the listens of one address
}

TEST_CASE("listen arguments: address forms and flags") {
  auto b = build(R"(
http {
  server { listen [::]:443 ssl http2 reuseport; }
  server { listen 0.0.0.0:8443 quic reuseport; }
  server { listen localhost:9443 default ssl; }
  server { listen unix:/run/x.sock; }
  server { server_name implicit; }
}
)");
  const auto& l0 = b->m.servers[0].listens[0];
  CHECK(l0.address == "[::]");
  CHECK(l0.port == 443);
  CHECK((l0.ssl && l0.http2 && l0.reuseport));
  const auto& l1 = b->m.servers[1].listens[0];
  CHECK(l1.address == "*");
  CHECK(l1.port == 8443);
  CHECK((l1.quic && !l1.ssl));
  const auto& l2 = b->m.servers[2].listens[0];
  CHECK(l2.address == "localhost");
  CHECK(l2.default_server);
  CHECK(b->m.servers[3].listens[0].address == "unix:/run/x.sock");
  CHECK(b->m.servers[4].listens[0].port == 80);
  CHECK(b->m.servers[4].listens[0].where == nullptr);
}

TEST_CASE("IPv6 listen addresses are one socket however they are spelled, as nginx compares them") {
  auto b = build(R"(
http {
  server { listen [::1]:443 ssl; server_name a; }
  server { listen [0:0::1]:443 ssl; server_name b; }
  server { listen [2001:DB8::1]:443 ssl; server_name c; }
  server { listen [not-v6]:443 ssl; server_name d; }
}
)");
  CHECK(b->m.servers[1].listens[0].address == "[::1]");
  CHECK(b->m.servers[2].listens[0].address == "[2001:db8::1]");
  CHECK(b->m.servers[3].listens[0].address == "[not-v6]");
  REQUIRE(b->m.sockets.size() == 3);
  CHECK(b->m.sockets[0].servers == std::vector<std::size_t>{0, 1});
}

TEST_CASE("a listen nginx refuses as a duplicate joins no socket and names the listen it repeats") {
  auto b = build(R"(
mail {
  server { listen 127.0.0.1:465 ssl; }
  server { listen 127.0.0.1:587; listen 127.0.0.1:465 ssl; }
}
stream {
  server { listen 5433; proxy_pass 127.0.0.1:5432; }
  server { listen *:5433; proxy_pass 127.0.0.1:5432; }
}
http {
  server { listen 443 ssl; listen 443 quic; listen 0.0.0.0:443; }
  server { listen 443 ssl; }
}
)");
  REQUIRE(b->m.servers.size() == 6);
  const auto& mail2 = b->m.servers[1];
  CHECK(mail2.listens[0].duplicate_of == nullptr);
  REQUIRE(mail2.listens[1].duplicate_of != nullptr);
  CHECK(mail2.listens[1].duplicate_of->line == 3);
  REQUIRE(b->m.servers[3].listens[0].duplicate_of != nullptr);
  CHECK(b->m.servers[3].listens[0].duplicate_of->line == 7);
  const auto& web = b->m.servers[4];
  CHECK(web.listens[1].duplicate_of == nullptr);  // quic: UDP, another socket
  REQUIRE(web.listens[2].duplicate_of != nullptr);
  CHECK(web.listens[2].duplicate_of == web.listens[0].where);
  CHECK(b->m.servers[5].listens[0].duplicate_of == nullptr);  // http: name-based, shared
  for (const auto& k : b->m.sockets) {
    if (k.context == model::context_kind::http) {
      // The quic listen is a UDP socket of its own, beside the TCP one.
      CHECK(k.servers == (k.quic ? std::vector<std::size_t>{4} : std::vector<std::size_t>{4, 5}));
    } else {
      CHECK(k.servers.size() == 1);
    }
  }
  // From 1.25.5 stream servers share the socket (chosen by server_name).
  auto newer = build(R"(
stream {
  server { listen 5433; proxy_pass 127.0.0.1:5432; }
  server { listen *:5433; proxy_pass 127.0.0.1:5432; }
}
)",
                     "1.26.3");
  CHECK(newer->m.servers[1].listens[0].duplicate_of == nullptr);
  REQUIRE(newer->m.sockets.size() == 1);
  CHECK(newer->m.sockets[0].servers.size() == 2);
}

TEST_CASE("quic listens are UDP sockets of their own with their reuseport listens and quic_bpf") {
  auto b = build(R"(
quic_bpf on;
http {
  server { listen 443 ssl; listen 443 quic reuseport; server_name a; quic_retry on; http3 on; }
  server { listen 443 quic reuseport; server_name b; quic_host_key k.key; }
  server { listen 443 ssl; server_name c; }
}
)",
                 "1.26.3");
  REQUIRE(b->m.sockets.size() == 2);
  const auto& tcp = b->m.sockets[0];
  const auto& udp = b->m.sockets[1];
  CHECK((!tcp.quic && tcp.ssl && !tcp.reuseport));
  CHECK(tcp.servers == std::vector<std::size_t>{0, 2});
  CHECK((udp.quic && !udp.ssl && udp.reuseport));
  CHECK(udp.servers == std::vector<std::size_t>{0, 1});
  CHECK(udp.default_server == 0);
  // nginx refuses the second reuseport ("duplicate listen options"): both are kept to say so.
  REQUIRE(udp.reuseport_listens.size() == 2);
  CHECK(udp.reuseport_listens[1]->line == 5);
  CHECK(b->m.quic_bpf == std::optional<bool>(true));
  REQUIRE(b->m.quic_bpf_where);
  CHECK(b->m.quic_bpf_where->line == 2);
  // QUIC and HTTP/3 directives resolve like the ssl_* ones.
  CHECK(model::is_on(b->m.servers[0].get("quic_retry")));
  CHECK(model::is_on(b->m.servers[0].get("http3")));
  CHECK(b->m.servers[1].get("quic_host_key")->first() == "k.key");
  CHECK(b->m.servers[0].get("quic_host_key") == nullptr);
  CHECK(model::quic_sockets_of(b->m, b->m.servers[0]).size() == 1);
  CHECK(model::quic_sockets_of(b->m, b->m.servers[2]).empty());
  CHECK(model::has_tcp_tls(b->m.servers[0]));
  CHECK_FALSE(model::has_tcp_tls(b->m.servers[1]));
}

TEST_CASE("ssl_protocols defaults follow the nginx version") {
  const std::string conf = "http { server { listen 443 ssl; } }";
  CHECK(build(conf, "1.22.1")->m.servers[0].get("ssl_protocols")->args().strings() ==
        std::vector<std::string>{"TLSv1", "TLSv1.1", "TLSv1.2"});
  CHECK(build(conf, "1.23.4")->m.servers[0].get("ssl_protocols")->args().strings() ==
        std::vector<std::string>{"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"});
  CHECK(build(conf, "1.27.3")->m.servers[0].get("ssl_protocols")->args().strings() ==
        std::vector<std::string>{"TLSv1.2", "TLSv1.3"});
}

TEST_CASE("`ssl on` makes every listen ssl before 1.25.1 only") {
  const std::string conf = "http { server { listen 443; ssl on; } }";
  CHECK(build(conf, "1.22.1")->m.servers[0].has_ssl);
  CHECK_FALSE(build(conf, "1.25.1")->m.servers[0].has_ssl);
}

TEST_CASE("stream servers inherit from the stream block") {
  auto b = build(R"(
stream {
  ssl_session_cache shared:S:1m;
  server { listen 8443 ssl; proxy_pass 127.0.0.1:1; }
}
)");
  REQUIRE(b->m.servers.size() == 1);
  CHECK(b->m.servers[0].context == model::context_kind::stream);
  CHECK(b->m.servers[0].get("ssl_session_cache")->from == model::origin::inherited);
  CHECK(model::to_string(model::origin::inherited, true) == "stream");
}

TEST_CASE("session cache kinds and shared zone sizes") {
  auto b = build(R"(
http {
  server { listen 1 ssl; }
  server { listen 2 ssl; ssl_session_cache off; }
  server { listen 3 ssl; ssl_session_cache builtin:1000; }
  server { listen 4 ssl; ssl_session_cache builtin:1000 shared:SSL:10m; }
}
)");
  CHECK(model::cache_kind(b->m.servers[0].get("ssl_session_cache")) ==
        model::session_cache_kind::none);
  CHECK(model::cache_kind(b->m.servers[1].get("ssl_session_cache")) ==
        model::session_cache_kind::off);
  CHECK(model::cache_kind(b->m.servers[2].get("ssl_session_cache")) ==
        model::session_cache_kind::builtin);
  CHECK(model::cache_kind(b->m.servers[3].get("ssl_session_cache")) ==
        model::session_cache_kind::shared);
  CHECK(model::shared_cache_bytes(b->m.servers[3].get("ssl_session_cache")) == 10u * 1024 * 1024);
}

TEST_CASE("versions parse from flags and nginx -V output") {
  CHECK(model::version::parse("1.22.1")->str() == "1.22.1");
  CHECK(model::version::parse("3.0")->str() == "3.0.0");
  CHECK(model::version::parse("1.1.1w")->str() == "1.1.1");
  CHECK_FALSE(model::version::parse("abc"));
  // What a user writes is read whole: a typo is an error, not another version.
  CHECK(model::version::parse_given("1.22.1")->str() == "1.22.1");
  CHECK(model::version::parse_given("3.0")->str() == "3.0.0");
  CHECK(model::version::parse_given("1.1.1w")->str() == "1.1.1");
  CHECK(model::version::parse_given("2")->str() == "2.0.0");
  for (const char* typo : {"", "banana2", "-1", "1.x", "1.22.1;", "1.22.1.5", " 1.22", "1.22.",
                           "v1.22.1", "99999999"}) {
    CAPTURE(typo);
    CHECK_FALSE(model::version::parse_given(typo));
  }
  auto v = model::parse_nginx_v(
      "nginx version: nginx/1.22.1\nbuilt with OpenSSL 3.0.22 25 Aug 2026 (running with OpenSSL "
      "3.0.19 27 Jan 2026)\n");
  CHECK(v.nginx->str() == "1.22.1");
  CHECK(v.openssl->str() == "3.0.19");
}

TEST_CASE("the package that owns a file, from dpkg-query -S output") {
  CHECK(model::package_owning("nginx-core: /usr/sbin/nginx\n", "/usr/sbin/nginx") == "nginx-core");
  CHECK(model::package_owning("nginx: /usr/sbin/nginx", "/usr/sbin/nginx") == "nginx");
  CHECK(model::package_owning("nginx-core:amd64: /usr/sbin/nginx\n", "/usr/sbin/nginx") ==
        "nginx-core");
  CHECK(model::package_owning(
            "diversion by foo from: /usr/sbin/nginx\ndiversion by foo to: /usr/sbin/nginx.real\n"
            "nginx: /usr/sbin/nginx\n",
            "/usr/sbin/nginx") == "nginx");
  // Another path, no owner, or a name dpkg would never print.
  CHECK(model::package_owning("nginx: /usr/sbin/nginx.old\n", "/usr/sbin/nginx") == "");
  CHECK(model::package_owning("dpkg-query: no path found matching pattern /x\n", "/x") == "");
  CHECK(model::package_owning("Nginx$(x): /usr/sbin/nginx\n", "/usr/sbin/nginx") == "");
}

TEST_CASE("a server's label is its first non-empty server_name, else its file and line") {
  auto b = build(R"(http {
  server { listen 443 ssl; server_name "" b.test c.test; }
  server { listen 444 ssl;
    server_name ""; }
  server { listen 445 ssl; }
}
)");
  REQUIRE(b->m.servers.size() == 3);
  CHECK(model::server_label(b->m, b->m.servers[0]) == "b.test");
  CHECK(model::server_label(b->m, b->m.servers[1]) == "server at /etc/nginx/nginx.conf:3");
  CHECK(model::server_label(b->m, b->m.servers[2]) == "server at /etc/nginx/nginx.conf:5");
  model::model no_source;
  CHECK(model::server_label(no_source, b->m.servers[0]) == "b.test");
  CHECK(model::server_label(no_source, b->m.servers[2]) == "server");
}

TEST_CASE("each server lists the sockets it is on and the block it is in") {
  auto b = build(R"(
http {
  server { listen 10.0.0.1:443 ssl; listen [::1]:443 ssl; server_name a; }
  server { listen 10.0.0.2:443 ssl; server_name b; }
  server { listen [0::1]:443 ssl; listen 10.0.0.1:443 ssl; listen 10.0.0.1:443; server_name c; }
}
stream {
  server { listen 10.0.0.1:443 ssl; }
}
)");
  REQUIRE(b->m.servers.size() == 4);
  // Sockets in order of first listen: 10.0.0.1:443, [::1]:443, 10.0.0.2:443 (http), then the
  // stream one, which is another socket though address and port are the same.
  REQUIRE(b->m.sockets.size() == 4);
  CHECK(b->m.sockets[0].name() == "10.0.0.1:443");
  CHECK(b->m.sockets[1].name() == "[::1]:443");
  CHECK(b->m.sockets[2].name() == "10.0.0.2:443");
  CHECK(b->m.sockets[3].context == model::context_kind::stream);
  CHECK(b->m.servers[0].sockets == std::vector<std::uint32_t>{0, 1});
  CHECK(b->m.servers[1].sockets == std::vector<std::uint32_t>{2});
  // The repeated listen of server c is a duplicate and joins nothing; its sockets are listed
  // once each, ascending, whatever the order of its listens.
  CHECK(b->m.servers[2].sockets == std::vector<std::uint32_t>{0, 1});
  CHECK(b->m.servers[3].sockets == std::vector<std::uint32_t>{3});
  CHECK(b->m.sockets[0].servers == std::vector<std::size_t>{0, 2});
  REQUIRE(b->m.servers[0].block != nullptr);
  CHECK(b->m.servers[0].block->name == "http");
  REQUIRE(b->m.servers[3].block != nullptr);
  CHECK(b->m.servers[3].block->name == "stream");
}
