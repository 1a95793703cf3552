// nginx as a TLS client to its upstreams, measured on the three nginx versions of the matrix
// (scripts/nginx-versions.sh): one nginx runs a plain HTTP front server that proxies to a TLS
// backend server on loopback, and the backend's access log records every upstream request with
// the connection it came on, its TLS protocol, whether its session was resumed, the SNI it
// received, the HTTP version and the Connection header. The front's log records the worker that
// served each client request. docs/nginx-facts.md#upstream-tls cites these cases; the upstream
// rules' docs cite those facts. The config errors nginx gives for upstream TLS come from
// `nginx -t` on each version.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "config/values.hpp"
#include "support/nginx_instance.hpp"
#include "support/nginx_run.hpp"
#include "support/nginx_version_cases.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

/// One upstream request as the backend logged it.
struct upstream_request {
  std::string connection;         ///< $connection: the TLS connection's serial number
  std::string protocol;           ///< $ssl_protocol
  bool resumed = false;           ///< $ssl_session_reused == "r"
  std::string sni;                ///< $ssl_server_name ("" when none came)
  std::string http;               ///< $server_protocol
  std::string connection_header;  ///< $http_connection ("" when absent)
};

/// What a run of requests through the front measured.
struct upstream_run {
  std::vector<upstream_request> requests;
  std::set<std::string> front_workers;  ///< pids of the front workers that served clients
  std::size_t connections() const {
    std::set<std::string> c;
    for (const auto& r : requests) c.insert(r.connection);
    return c.size();
  }
  /// Full handshakes: the first request of each TLS connection, not resumed.
  std::size_t full_handshakes() const {
    std::set<std::string> seen;
    std::size_t n = 0;
    for (const auto& r : requests)
      if (seen.insert(r.connection).second && !r.resumed) ++n;
    return n;
  }
  std::size_t resumed_handshakes() const {
    std::set<std::string> seen;
    std::size_t n = 0;
    for (const auto& r : requests)
      if (seen.insert(r.connection).second && r.resumed) ++n;
    return n;
  }
};

/// The rest of a log line's field: "-" (nginx's empty value) read as "".
std::string field(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s == "-" ? std::string() : s;
}

struct upstream_setup {
  int workers = 1;
  std::string http_extra;  ///< http{} level (upstream blocks, log formats are added)
  std::string location;    ///< the front location's body (proxy_pass ...)
  bool front_reuseport = false;
  /// Client requests: `clients` connections of `per_client` requests each.
  int clients = 1;
  int per_client = 10;
};

/// Starts nginx `v` with the front and the backend, sends the requests with curl, and reads
/// both access logs. `@B@` in the setup's texts is the backend's port.
upstream_run measure(const nginx_version_entry& v, const upstream_setup& s) {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  const int front = free_port();
  const int backend = free_port();
  auto subst = [&](std::string t) {
    for (std::size_t at; (at = t.find("@B@")) != std::string::npos;)
      t.replace(at, 3, std::to_string(backend));
    return t;
  };
  const std::string body =
      "log_format up '$connection $ssl_protocol $ssl_session_reused \"$ssl_server_name\" "
      "$server_protocol \"$http_connection\"';\n"
      "log_format fr '$pid';\n" +
      subst(s.http_extra) + "\nserver {\n  listen 127.0.0.1:" + std::to_string(backend) +
      " ssl;\n  server_name backend.test;\n  ssl_certificate " + pki.chain +
      ";\n  ssl_certificate_key " + pki.leaf_key +
      ";\n  ssl_protocols TLSv1.2 TLSv1.3;\n  ssl_session_cache shared:B:1m;\n"
      "  access_log backend.log up;\n  keepalive_requests 1000;\n"
      "  location / { return 200 \"ok\\n\"; }\n}\n"
      "server {\n  listen 127.0.0.1:" +
      std::to_string(front) + (s.front_reuseport ? " reuseport" : "") +
      ";\n  access_log front.log fr;\n  location / {\n" + subst(s.location) + "\n  }\n}\n";
  nginx_options o;
  o.binary = v.binary;
  o.wait_ports = {front, backend};
  nginx_instance ngx(nginx_conf(s.workers, body), o);
  const std::string url = "http://127.0.0.1:" + std::to_string(front) + "/";
  for (int c = 0; c < s.clients; ++c) {
    std::vector<std::string> argv{"curl", "-sS", "--max-time", "20"};
    for (int i = 0; i < s.per_client; ++i) {
      argv.push_back(url);
      argv.push_back("-o");
      argv.push_back("/dev/null");
    }
    auto r = run(argv, "", 60);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err << ngx.error_log());
  }
  ngx.stop();  // flushes the logs
  upstream_run out;
  std::ifstream back(ngx.prefix() / "backend.log");
  for (std::string line; std::getline(back, line);) {
    std::istringstream in(line);
    upstream_request r;
    std::string reused, sni, header;
    in >> r.connection >> r.protocol >> reused >> sni >> r.http >> header;
    r.resumed = reused == "r";
    r.sni = field(sni);
    r.connection_header = field(header);
    r.protocol = field(r.protocol);
    out.requests.push_back(r);
  }
  std::ifstream fr(ngx.prefix() / "front.log");
  for (std::string line; std::getline(fr, line);) out.front_workers.insert(line);
  std::cout << "  " << out.requests.size() << " upstream requests on " << out.connections()
            << " TLS connections: " << out.full_handshakes() << " full, "
            << out.resumed_handshakes() << " resumed; protocol "
            << (out.requests.empty() ? "" : out.requests.front().protocol) << ", "
            << (out.requests.empty() ? "" : out.requests.front().http) << ", Connection \""
            << (out.requests.empty() ? "" : out.requests.front().connection_header) << "\", SNI \""
            << (out.requests.empty() ? "" : out.requests.front().sni) << "\"; front workers "
            << out.front_workers.size() << std::endl;
  REQUIRE(out.requests.size() == static_cast<std::size_t>(s.clients * s.per_client));
  return out;
}

// ---- defaults ----

void defaults(const nginx_version_entry& v) {
  upstream_setup s;
  s.location = "proxy_pass https://127.0.0.1:@B@;";
  const auto r = measure(v, s);
  // Offered protocols: 1.22.1's default proxy_ssl_protocols stop at TLS 1.2; TLS 1.3 from 1.23.4.
  for (const auto& q : r.requests) {
    CHECK(q.protocol == by_version<std::string>(v, "TLSv1.2", "TLSv1.3", "TLSv1.3"));
    // proxy_http_version 1.0 with nginx's own Connection: close; 1.30 sends HTTP/1.1 and no
    // Connection header.
    CHECK(q.http == by_version<std::string>(v, "HTTP/1.0", "HTTP/1.0", "HTTP/1.1"));
    CHECK(q.connection_header == by_version<std::string>(v, "close", "close", ""));
    CHECK(q.sni.empty());  // proxy_ssl_server_name off: no SNI
  }
  // A new TLS connection for every request (no upstream block: no connection is kept, 1.30
  // too); the session of the last one is offered and resumed.
  CHECK(r.connections() == 10);
  CHECK(r.full_handshakes() == 1);
  CHECK(r.resumed_handshakes() == 9);
}
NGINX_VERSION_CASES(
    "upstream TLS defaults: protocol, HTTP/1.0, Connection close, no SNI, a connection per request",
    defaults)

void tls12_sessions(const nginx_version_entry& v) {
  upstream_setup s;
  s.location = "proxy_pass https://127.0.0.1:@B@;\nproxy_ssl_protocols TLSv1.2;";
  const auto r = measure(v, s);
  CHECK(r.requests.front().protocol == "TLSv1.2");
  CHECK(r.connections() == 10);
  CHECK(r.full_handshakes() == 1);
  CHECK(r.resumed_handshakes() == 9);
}
NGINX_VERSION_CASES("upstream TLS 1.2 sessions are resumed by default (proxy_ssl_session_reuse on)",
                    tls12_sessions)

void tls13_sessions(const nginx_version_entry& v) {
  upstream_setup s;
  s.location = "proxy_pass https://127.0.0.1:@B@;\nproxy_ssl_protocols TLSv1.3;";
  const auto r = measure(v, s);
  CHECK(r.requests.front().protocol == "TLSv1.3");
  CHECK(r.connections() == 10);
  CHECK(r.full_handshakes() == 1);
  CHECK(r.resumed_handshakes() == 9);
}
NGINX_VERSION_CASES("upstream TLS 1.3 sessions are resumed by default", tls13_sessions)

void reuse_off(const nginx_version_entry& v) {
  upstream_setup s;
  s.location = "proxy_pass https://127.0.0.1:@B@;\nproxy_ssl_session_reuse off;";
  const auto r = measure(v, s);
  CHECK(r.connections() == 10);
  CHECK(r.full_handshakes() == 10);
}
NGINX_VERSION_CASES("proxy_ssl_session_reuse off: every upstream connection is a full handshake",
                    reuse_off)

void variable_target(const nginx_version_entry& v) {
  upstream_setup s;
  s.location = "set $backend 127.0.0.1:@B@;\nproxy_pass https://$backend;";
  const auto r = measure(v, s);
  CHECK(r.connections() == 10);
  // Resolved per request: no upstream peer outlives the request to keep a session in.
  CHECK(r.full_handshakes() == 10);
}
NGINX_VERSION_CASES(
    "proxy_pass with a variable and no upstream block: every request is a full handshake",
    variable_target)

// ---- keepalive ----

void keepalive_defaults(const nginx_version_entry& v) {
  upstream_setup s;
  s.http_extra = "upstream b { server 127.0.0.1:@B@; keepalive 4; }";
  s.location = "proxy_pass https://b;";
  const auto r = measure(v, s);
  // keepalive alone keeps nothing before 1.30: HTTP/1.0 with Connection: close ends every
  // connection. 1.30's defaults (HTTP/1.1, no Connection header) keep it.
  CHECK(r.connections() == by_version<std::size_t>(v, 10, 10, 1));
}
NGINX_VERSION_CASES(
    "upstream keepalive with nginx's default HTTP/1.0 and Connection close: a connection per "
    "request",
    keepalive_defaults)

void keepalive_http10_cleared(const nginx_version_entry& v) {
  upstream_setup s;
  s.http_extra = "upstream b { server 127.0.0.1:@B@; keepalive 4; }";
  s.location = "proxy_pass https://b;\nproxy_set_header Connection \"\";";
  const auto r = measure(v, s);
  // HTTP/1.0 without Connection: the backend closes after each response (1.30: HTTP/1.1).
  CHECK(r.connections() == by_version<std::size_t>(v, 10, 10, 1));
  CHECK(r.requests.front().connection_header.empty());
}

void block_without_keepalive(const nginx_version_entry& v) {
  upstream_setup s;
  s.http_extra = "upstream b { server 127.0.0.1:@B@; }";
  s.location = "proxy_pass https://b;\nproxy_http_version 1.1;\nproxy_set_header Connection \"\";";
  const auto r = measure(v, s);
  // Without `keepalive` nothing is kept before 1.30; 1.30 keeps idle connections by default.
  CHECK(r.connections() == by_version<std::size_t>(v, 10, 10, 1));
}
NGINX_VERSION_CASES(
    "an upstream block without keepalive, HTTP/1.1 and Connection cleared: connections kept "
    "only by 1.30",
    block_without_keepalive)

void http10_explicit(const nginx_version_entry& v) {
  upstream_setup s;
  s.http_extra = "upstream b { server 127.0.0.1:@B@; keepalive 4; }";
  s.location = "proxy_pass https://b;\nproxy_http_version 1.0;";
  const auto r = measure(v, s);
  // HTTP/1.0 ends every connection; 1.30 sends no Connection header even then.
  CHECK(r.requests.front().http == "HTTP/1.0");
  CHECK(r.requests.front().connection_header == by_version<std::string>(v, "close", "close", ""));
  CHECK(r.connections() == 10);
}
NGINX_VERSION_CASES("proxy_http_version 1.0 with keepalive: a connection per request",
                    http10_explicit)
NGINX_VERSION_CASES(
    "upstream keepalive with Connection cleared but HTTP/1.0: a connection per request",
    keepalive_http10_cleared)

void keepalive_done_right(const nginx_version_entry& v) {
  upstream_setup s;
  s.http_extra = "upstream b { server 127.0.0.1:@B@; keepalive 4; }";
  s.location = "proxy_pass https://b;\nproxy_http_version 1.1;\nproxy_set_header Connection \"\";";
  const auto r = measure(v, s);
  CHECK(r.connections() == 1);
  CHECK(r.full_handshakes() == 1);
  CHECK(r.requests.front().http == "HTTP/1.1");
  CHECK(r.requests.front().connection_header.empty());
}
NGINX_VERSION_CASES(
    "upstream keepalive with HTTP/1.1 and Connection cleared: one TLS connection for 10 requests",
    keepalive_done_right)

void keepalive_without_connection_cleared(const nginx_version_entry& v) {
  upstream_setup s;
  s.http_extra = "upstream b { server 127.0.0.1:@B@; keepalive 4; }";
  s.location = "proxy_pass https://b;\nproxy_http_version 1.1;";
  const auto r = measure(v, s);
  CHECK(r.connections() == by_version<std::size_t>(v, 10, 10, 1));
  CHECK(r.requests.front().connection_header == by_version<std::string>(v, "close", "close", ""));
}
NGINX_VERSION_CASES(
    "upstream keepalive with HTTP/1.1 and nginx's Connection close: a connection per request",
    keepalive_without_connection_cleared)

void connection_from_map(const nginx_version_entry& v) {
  upstream_setup s;
  s.location =
      "proxy_pass https://b;\nproxy_http_version 1.1;\nproxy_set_header Upgrade $http_upgrade;\n"
      "proxy_set_header Connection $connection_upgrade;";
  // The WebSocket recipe of nginx's documentation: a request without an Upgrade header gets
  // `Connection: close`, so no connection is kept, keepalive or not, on every version.
  s.http_extra =
      "upstream b { server 127.0.0.1:@B@; keepalive 4; }\n"
      "map $http_upgrade $connection_upgrade { default upgrade; '' close; }";
  const auto close = measure(v, s);
  CHECK(close.requests.front().connection_header == "close");
  CHECK(close.connections() == 10);
  CHECK(close.full_handshakes() == 1);
  // With '' "" those requests send no Connection header: the connection is kept.
  s.http_extra =
      "upstream b { server 127.0.0.1:@B@; keepalive 4; }\n"
      "map $http_upgrade $connection_upgrade { default upgrade; '' \"\"; }";
  const auto kept = measure(v, s);
  CHECK(kept.requests.front().connection_header.empty());
  CHECK(kept.connections() == 1);
}
NGINX_VERSION_CASES(
    "a Connection header from map $http_upgrade: '' close ends every upstream connection and '' "
    "empty keeps it",
    connection_from_map)

// ---- SNI ----

void sni(const nginx_version_entry& v) {
  upstream_setup s;
  s.http_extra = "upstream backend.test { server 127.0.0.1:@B@; }";
  s.location = "proxy_pass https://backend.test;\nproxy_ssl_server_name on;";
  s.per_client = 2;
  const auto on = measure(v, s);
  CHECK(on.requests.front().sni == "backend.test");
  s.location = "proxy_pass https://backend.test;";
  const auto off = measure(v, s);
  CHECK(off.requests.front().sni.empty());
}
NGINX_VERSION_CASES("proxy_ssl_server_name: the upstream's name as SNI when on, none by default",
                    sni)

// ---- sessions per worker or shared through the zone ----

void sessions_by_worker(const nginx_version_entry& v, bool zone, const std::string& protocol) {
  upstream_setup s;
  s.workers = 2;
  s.front_reuseport = true;  // the kernel spreads the 20 client connections over both workers
  s.http_extra =
      std::string("upstream b { ") + (zone ? "zone b 64k; " : "") + "server 127.0.0.1:@B@; }";
  s.location = "proxy_pass https://b;\nproxy_ssl_protocols " + protocol + ";";
  s.clients = 20;
  s.per_client = 1;
  const auto r = measure(v, s);
  REQUIRE(r.front_workers.size() == 2);
  // 1.30 keeps the connections by default: one per worker, each a handshake.
  CHECK(r.connections() == by_version<std::size_t>(v, 20, 20, 2));
  // Without a zone each worker keeps the peer's session in its own memory: one full handshake
  // per worker. With a zone the peer and its session are shared: one full handshake in all.
  CHECK(r.full_handshakes() == (zone ? 1 : r.front_workers.size()));
  // The first handshake of each worker: with a zone the second worker resumes the first's.
  CHECK(r.resumed_handshakes() == r.connections() - r.full_handshakes());
}
void tls12_per_worker(const nginx_version_entry& v) {
  sessions_by_worker(v, false, "TLSv1.2");
}
void tls12_zone(const nginx_version_entry& v) {
  sessions_by_worker(v, true, "TLSv1.2");
}
void tls13_per_worker(const nginx_version_entry& v) {
  sessions_by_worker(v, false, "TLSv1.3");
}
void tls13_zone(const nginx_version_entry& v) {
  sessions_by_worker(v, true, "TLSv1.3");
}
NGINX_VERSION_CASES("upstream TLS 1.2 sessions without a zone: one full handshake per worker",
                    tls12_per_worker)
NGINX_VERSION_CASES("upstream TLS 1.2 sessions with a zone: shared by the workers", tls12_zone)
NGINX_VERSION_CASES("upstream TLS 1.3 sessions without a zone: one full handshake per worker",
                    tls13_per_worker)
NGINX_VERSION_CASES("upstream TLS 1.3 sessions with a zone: shared by the workers", tls13_zone)

// ---- nginx -t ----

/// `nginx -t` of a config with `http_body`; prints and returns its [emerg] line ("" when none)
/// with the exit code.
std::pair<int, std::string> nginx_t(const nginx_version_entry& v, const std::string& http_body) {
  temp_dir d;
  d.write("nginx.conf", nginx_conf(1, http_body));
  const std::string p = d.path().string() + "/";
  auto r = run_nginx({v.binary, "-t", "-p", p, "-c", p + "nginx.conf"}, "", 30);
  std::string emerg;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);)
    if (const auto l = config::parse_nginx_log_line(line);
        l && l->level == "emerg" && emerg.empty())
      emerg = l->message;
  std::cout << "  nginx -t exit " << r.exit_code << ": " << emerg << std::endl;
  return {r.exit_code, emerg};
}

std::string tls_location(const std::string& extra, const std::string& target = "https://b") {
  return "upstream b { server 127.0.0.1:9; }\nserver {\n listen 127.0.0.1:9;\n location / {\n"
         "  proxy_pass " +
         target + ";\n  " + extra + "\n }\n}\n";
}

void config_errors(const nginx_version_entry& v) {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  const std::string missing = (dir.path() / "missing.pem").string();
  CHECK(nginx_t(v, tls_location("")).first == 0);
  CHECK(nginx_t(v, tls_location("proxy_ssl_verify on;")) ==
        std::pair<int, std::string>{1, "no proxy_ssl_trusted_certificate for proxy_ssl_verify"});
  // Inherited from http: the same error, for every TLS location.
  CHECK(nginx_t(v, "proxy_ssl_verify on;\n" + tls_location("")) ==
        std::pair<int, std::string>{1, "no proxy_ssl_trusted_certificate for proxy_ssl_verify"});
  // A location that proxies to plain http sets up no upstream TLS: nothing is checked.
  CHECK(nginx_t(v, tls_location("proxy_ssl_verify on;", "http://b")).first == 0);
  // A target with variables may be https: nginx checks it.
  CHECK(nginx_t(v, tls_location("proxy_ssl_verify on;", "$scheme://b")).first == 1);
  CHECK(nginx_t(v, tls_location("proxy_ssl_certificate " + pki.chain + ";")) ==
        std::pair<int, std::string>{1,
                                    "no \"proxy_ssl_certificate_key\" is defined for "
                                    "certificate \"" +
                                        pki.chain + "\""});
  const auto cert_missing =
      nginx_t(v, tls_location("proxy_ssl_certificate " + missing +
                              ";\n  proxy_ssl_certificate_key " + pki.leaf_key + ";"));
  CHECK(cert_missing.first == 1);
  CHECK(cert_missing.second.find("cannot load certificate \"" + missing + "\"") == 0);
  const auto key_missing =
      nginx_t(v, tls_location("proxy_ssl_certificate " + pki.chain +
                              ";\n  proxy_ssl_certificate_key " + missing + ";"));
  CHECK(key_missing.first == 1);
  CHECK(key_missing.second.find("cannot load certificate key \"" + missing + "\"") == 0);
  // A client key that is not the certificate's: OpenSSL's words through nginx.
  auto other = tls::make_pki((dir.path() / "other").string(), {});
  const auto mismatch =
      nginx_t(v, tls_location("proxy_ssl_certificate " + pki.chain +
                              ";\n  proxy_ssl_certificate_key " + other.leaf_key + ";"));
  CHECK(mismatch.first == 1);
  CHECK(mismatch.second.find("key values mismatch") != std::string::npos);
  const auto trusted_missing = nginx_t(
      v, tls_location("proxy_ssl_verify on;\n  proxy_ssl_trusted_certificate " + missing + ";"));
  CHECK(trusted_missing.first == 1);
  CHECK(trusted_missing.second.find(
            by_version<std::string>(v, "SSL_CTX_load_verify_locations(\"" + missing + "\") failed",
                                    "SSL_CTX_load_verify_locations(\"" + missing + "\") failed",
                                    "cannot load certificate \"" + missing + "\"")) == 0);
  CHECK(nginx_t(v, tls_location("proxy_ssl_verify on;\n  proxy_ssl_trusted_certificate " +
                                pki.issuer + ";"))
            .first == 0);
  // grpc and uwsgi say the same in their own names.
  CHECK(nginx_t(v,
                "upstream b { server 127.0.0.1:9; }\nserver {\n listen 127.0.0.1:9;\n "
                "location / { grpc_pass grpcs://b; grpc_ssl_verify on; }\n}\n") ==
        std::pair<int, std::string>{1, "no grpc_ssl_trusted_certificate for grpc_ssl_verify"});
  CHECK(nginx_t(v,
                "upstream b { server 127.0.0.1:9; }\nserver {\n listen 127.0.0.1:9;\n "
                "location / { uwsgi_pass suwsgi://b; uwsgi_ssl_verify on; }\n}\n") ==
        std::pair<int, std::string>{1, "no uwsgi_ssl_trusted_certificate for uwsgi_ssl_verify"});
}
NGINX_VERSION_CASES("nginx -t: the upstream TLS config errors in nginx's words", config_errors)

}  // namespace
