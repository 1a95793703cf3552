// The prober is not nginx-only: openssl s_server, a Python ssl server and a JDK
// SSLServerSocket server, each with its resumption measured and reported right.
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <sstream>

#include "probe_util.hpp"
#include "support/server_process.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

const char* python_server = R"PY(
import socket, ssl, sys, threading
port, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.minimum_version = ssl.TLSVersion.TLSv1_2
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(64)
def handle(c):
    try:
        c.settimeout(5)
        s = ctx.wrap_socket(c, server_side=True)
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            d = s.recv(4096)
            if not d:
                break
            data += d
        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        s.close()
    except Exception:
        pass
    finally:
        c.close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
)PY";

const char* java_server = R"JAVA(
import java.io.*;
import java.net.InetAddress;
import java.security.KeyStore;
import javax.net.ssl.*;

public class TlsServer {
  public static void main(String[] a) throws Exception {
    int port = Integer.parseInt(a[0]);
    char[] pw = "changeit".toCharArray();
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (FileInputStream f = new FileInputStream(a[1])) { ks.load(f, pw); }
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(ks, pw);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(kmf.getKeyManagers(), null, null);
    if (a.length > 2) ctx.getServerSessionContext().setSessionTimeout(Integer.parseInt(a[2]));
    SSLServerSocket ss = (SSLServerSocket) ctx.getServerSocketFactory()
        .createServerSocket(port, 64, InetAddress.getByName("127.0.0.1"));
    ss.setEnabledProtocols(new String[] {"TLSv1.3", "TLSv1.2"});
    while (true) {
      SSLSocket s = (SSLSocket) ss.accept();
      new Thread(() -> handle(s)).start();
    }
  }
  static void handle(SSLSocket s) {
    try (s) {
      s.setSoTimeout(5000);
      InputStream in = s.getInputStream();
      int state = 0, n = 0, c;
      while (state < 4 && n < 65536 && (c = in.read()) >= 0) {
        n++;
        state = (c == '\r' && (state == 0 || state == 2)) ? state + 1 : (c == '\n' && (state == 1 || state == 3)) ? state + 1 : 0;
      }
      OutputStream out = s.getOutputStream();
      out.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".getBytes());
      out.flush();
    } catch (Exception e) {
    }
  }
}
)JAVA";

void check_all_resume(const probe::target_result& r, int n) {
  for (const auto& run : r.protocols) {
    CAPTURE(probe::to_string(run.protocol));
    CAPTURE(probe::to_string(run.mechanism));
    CHECK_FALSE(run.error);
    CHECK(run.attempts == n);
    CHECK(run.resumed == n);
    CHECK(run.rate == 1.0);
    CHECK(run.negotiated_protocol == probe::to_string(run.protocol));
  }
}

}  // namespace

TEST_CASE("openssl s_server: tickets and session IDs resume 100%, one OpenSSL key name") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  int port = free_port();
  server_process srv(
      {"openssl", "s_server", "-accept", "127.0.0.1:" + std::to_string(port), "-cert",
       pki.leaf_cert, "-key", pki.leaf_key, "-cert_chain", pki.chain, "-www", "-quiet"},
      (dir.path() / "s_server.log").string(), port);
  auto o = quick(10);
  o.http = false;  // s_server -www answers GET only; it is not an HTTP server for HEAD
  auto r = probe_port(port, o);
  REQUIRE_FALSE(r.error);
  REQUIRE(r.protocols.size() == 3);
  check_all_resume(r, 10);  // s_server keeps an internal session cache: session IDs resume too
  const auto& t13 = run_of(r, "TLSv1.3", "ticket");
  CHECK(t13.ticket_key_names.size() == 1);  // OpenSSL's stateless layout: key name first
  CHECK(t13.lifetime_hint_s == 7200u);      // s_server's default session timeout
  CHECK(run_of(r, "TLSv1.2", "ticket").ticket_key_names.size() == 1);
}

TEST_CASE(
    "Python ssl server: tickets resume 100%, session IDs never (closed without close_notify)") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  auto script = dir.write("server.py", python_server);
  int port = free_port();
  server_process srv(
      {"/usr/bin/python3", script.string(), std::to_string(port), pki.chain, pki.leaf_key},
      (dir.path() / "py.log").string(), port);
  // One connection at a time: the server drops a session when the connection that made it is
  // freed, which with attempts in flight can come after the next attempt's handshake.
  auto o = quick(10);
  o.per_target = 1;
  auto r = probe_port(port, o);
  INFO(srv.log());
  REQUIRE_FALSE(r.error);
  REQUIRE(r.protocols.size() == 3);
  const auto& t13 = run_of(r, "TLSv1.3", "ticket");
  const auto& t12 = run_of(r, "TLSv1.2", "ticket");
  const auto& id12 = run_of(r, "TLSv1.2", "session_id");
  CHECK(t13.resumed == 10);
  CHECK(t12.resumed == 10);
  CHECK(t13.max_tickets_per_connection == 2);  // CPython: SSLContext.num_tickets = 2
  CHECK(t13.ticket_key_names.size() == 1);
  // The server closes with socket.close(), never SSL_shutdown: OpenSSL then drops the session
  // from its cache (SSL_free -> ssl_clear_bad_session), so a session ID never resumes.
  CHECK(id12.attempts == 10);
  CHECK(id12.resumed == 0);
  CHECK(id12.session_id_issued);
  // Cross-check with openssl s_client, independently of the prober.
  std::string sess = (dir.path() / "id.pem").string();
  std::string connect = "127.0.0.1:" + std::to_string(port);
  auto first = run({"openssl", "s_client", "-connect", connect, "-tls1_2", "-no_ticket",
                    "-sess_out", sess, "-ign_eof"},
                   "HEAD / HTTP/1.1\r\nHost: localhost\r\n\r\n", 20);
  auto second =
      run({"openssl", "s_client", "-connect", connect, "-tls1_2", "-no_ticket", "-sess_in", sess},
          "", 20);
  CHECK(second.out.find("\nNew, TLSv1.2") != std::string::npos);
  CHECK(second.out.find("\nReused,") == std::string::npos);
}

namespace {

/// The JDK server above, compiled into `dir` with a PKCS#12 keystore of a fresh PKI; `start`
/// runs it on a free loopback port, with `session_timeout_s` for its server session context
/// (SSLSessionContext.setSessionTimeout) when given.
struct jdk_server {
  explicit jdk_server(temp_dir& d) : dir(d) {
    auto pki = tls::make_pki((dir.path() / "pki").string(), {});
    p12 = (dir.path() / "server.p12").string();
    auto pk = run({"openssl", "pkcs12", "-export", "-in", pki.chain, "-inkey", pki.leaf_key, "-out",
                   p12, "-passout", "pass:changeit", "-name", "server"});
    REQUIRE(pk.exit_code == 0);
    auto src = dir.write("TlsServer.java", java_server);
    auto jc = run({"javac", "-d", dir.path().string(), src.string()}, "", 120);
    REQUIRE_MESSAGE(jc.exit_code == 0, jc.err);
  }
  std::unique_ptr<server_process> start(int port, std::optional<int> session_timeout_s = {}) {
    std::vector<std::string> argv{
        "java", "-cp", dir.path().string(), "TlsServer", std::to_string(port), p12};
    if (session_timeout_s) argv.push_back(std::to_string(*session_timeout_s));
    return std::make_unique<server_process>(
        argv, (dir.path() / ("java-" + std::to_string(port) + ".log")).string(), port, 30000);
  }
  temp_dir& dir;
  std::string p12;
};

}  // namespace

TEST_CASE("JDK SSLServerSocket: resumption measured, opaque tickets make no key-domain claim") {
  temp_dir dir;
  jdk_server jdk(dir);
  int port = free_port();
  auto srv_ptr = jdk.start(port);
  auto& srv = *srv_ptr;
  // One connection at a time: the server drops a session when the connection that made it is
  // freed, which with attempts in flight can come after the next attempt's handshake.
  auto o = quick(10);
  o.per_target = 1;
  auto r = probe_port(port, o);
  INFO(srv.log());
  REQUIRE_FALSE(r.error);
  REQUIRE(r.protocols.size() == 3);
  const auto& t13 = run_of(r, "TLSv1.3", "ticket");
  const auto& id12 = run_of(r, "TLSv1.2", "session_id");
  MESSAGE("JDK: TLS 1.3 " << t13.resumed << "/" << t13.attempts << ", tickets " << t13.tickets
                          << " (" << t13.ticket_min_bytes << "-" << t13.ticket_max_bytes
                          << " bytes), key names " << t13.ticket_key_names.size() << ", opaque "
                          << t13.opaque_tickets);
  MESSAGE("JDK: TLS 1.2 session IDs " << id12.resumed << "/" << id12.attempts);
  CHECK(t13.resumed == 10);
  CHECK(id12.resumed == 10);  // the JDK's server session cache
  CHECK(t13.tickets > 0);
  // Every ticket starts differently in the JDK's format: no key name, no key-domain claim.
  CHECK(t13.ticket_key_names.empty());
  CHECK(t13.opaque_tickets == t13.stateless_tickets);
  auto v = report_verdicts_for_test(r);
  CHECK(v.find("different ticket keys") == std::string::npos);
}

namespace {

/// The lifetime hint of the first TLS 1.2 NewSessionTicket on the wire, read from `openssl
/// s_client -msg` (the message's first hex line: type, 3 length bytes, then the 4-byte hint).
std::optional<std::uint32_t> tls12_lifetime_hint_on_wire(int port) {
  auto r = run({"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port), "-tls1_2",
                "-msg", "-ign_eof"},
               "HEAD / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", 20);
  const auto at = r.out.find("<<< TLS 1.2, Handshake [length ");
  const auto nst = r.out.find("], NewSessionTicket\n", at);
  if (at == std::string::npos || nst == std::string::npos) return std::nullopt;
  std::istringstream hex(r.out.substr(nst + 20, 64));
  std::vector<unsigned> bytes;
  for (std::string b; bytes.size() < 8 && hex >> b;) bytes.push_back(std::stoul(b, nullptr, 16));
  if (bytes.size() < 8 || bytes[0] != 4) return std::nullopt;
  return (bytes[4] << 24) | (bytes[5] << 16) | (bytes[6] << 8) | bytes[7];
}

}  // namespace

TEST_CASE(
    "JDK with session timeout 0 sends TLS 1.2 tickets with lifetime hint 0: JSON says "
    "unspecified, not 0 s") {
  temp_dir dir;
  jdk_server jdk(dir);
  const int zero_port = free_port(), day_port = free_port();
  auto zero = jdk.start(zero_port, 0);
  auto day = jdk.start(day_port, 86400);
  // What goes on the wire, independently of the prober.
  REQUIRE(tls12_lifetime_hint_on_wire(zero_port) == std::optional<std::uint32_t>(0));
  REQUIRE(tls12_lifetime_hint_on_wire(day_port) == std::optional<std::uint32_t>(86400));
  auto tls12_ticket_run = [](int port) {
    auto j = ngxtls_json({"probe", "127.0.0.1:" + std::to_string(port), "--sni", "localhost",
                          "--tls1.2", "-n", "4", "-c", "1", "--no-ocsp"});
    for (const auto& run : j.at("targets").at(0).at("protocols"))
      if (run.at("mechanism") == "ticket") return run;
    FAIL("no TLS 1.2 ticket run: " << j.dump());
    return nlohmann::json();
  };
  const auto unspecified = tls12_ticket_run(zero_port);
  INFO(unspecified.dump());
  CHECK(unspecified.at("tickets").get<int>() > 0);
  CHECK(unspecified.at("lifetime_hint_unspecified") == true);
  CHECK(unspecified.at("lifetime_hint_s").is_null());
  const auto daylong = tls12_ticket_run(day_port);
  CHECK(daylong.at("lifetime_hint_unspecified") == false);
  CHECK(daylong.at("lifetime_hint_s") == 86400);
  // The text report says it in words.
  auto text = run({ngxtls_binary(), "probe", "127.0.0.1:" + std::to_string(zero_port), "--sni",
                   "localhost", "--tls1.2", "-n", "2", "-c", "1", "--no-ocsp"},
                  "", 60);
  CHECK(text.out.find(", lifetime hint unspecified (0)") != std::string::npos);
  CHECK(text.out.find("lifetime hint 0 s") == std::string::npos);
}

namespace {

// An HTTP backend for stunnel: answers every request line with 200 and closes.
const char* http_backend = R"PY(
import socket, sys, threading
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(64)
def handle(c):
    try:
        c.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            d = c.recv(4096)
            if not d:
                break
            data += d
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    except Exception:
        pass
    finally:
        c.close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
)PY";

/// stunnel4 (Debian's) in server mode on 127.0.0.1:port in front of the HTTP backend, with
/// `options` lines added to its service section.
struct stunnel_server {
  stunnel_server(temp_dir& dir, const tls::pki_paths& pki, const std::vector<std::string>& options)
      : backend_port(free_port()),
        backend({"/usr/bin/python3", dir.write("backend.py", http_backend).string(),
                 std::to_string(backend_port)},
                (dir.path() / "backend.log").string(), backend_port),
        port(free_port()),
        tunnel({"stunnel4", write_conf(dir, pki, options)}, (dir.path() / "stunnel.log").string(),
               port) {}

  std::string write_conf(temp_dir& dir, const tls::pki_paths& pki,
                         const std::vector<std::string>& options) {
    std::string conf =
        "foreground = yes\npid =\n[https]\naccept = 127.0.0.1:" + std::to_string(port) +
        "\nconnect = 127.0.0.1:" + std::to_string(backend_port) + "\ncert = " + pki.chain +
        "\nkey = " + pki.leaf_key + "\n";
    for (const auto& o : options) conf += o + "\n";
    return dir.write("stunnel.conf", conf).string();
  }

  int backend_port;
  server_process backend;
  int port;
  server_process tunnel;
};

}  // namespace

TEST_CASE(
    "stunnel with ticketKeySecret: prefixes that repeat while every attempt resumes are no key "
    "names") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  // 32-byte secrets, hex (stunnel(8): ticketKeySecret, ticketMacSecret).
  stunnel_server st(
      dir, pki,
      {"ticketKeySecret = " + std::string(64, 'a'), "ticketMacSecret = " + std::string(64, 'b')});
  auto o = quick(40);
  o.tls12 = false;
  auto r = probe_port(st.port, o);
  INFO(st.tunnel.log());
  REQUIRE_FALSE(r.error);
  const auto& t13 = run_of(r, "TLSv1.3", "ticket");
  CHECK(t13.resumed == 40);
  // stunnel's ticket key callback leaves the 16 name bytes unset: they repeat in a few
  // patterns, which the 40 of 40 resumed attempts contradict as key names.
  CHECK(t13.ticket_key_names.empty());
  CHECK(t13.opaque_tickets == t13.stateless_tickets);
  REQUIRE(t13.opaque_reason);
  // Three or more prefixes repeat (two would be read as a key rotation in progress).
  CHECK(std::stoi(*t13.opaque_reason) >= 3);
  CHECK(t13.opaque_reason->find("40 of 40 attempts resumed") != std::string::npos);
  auto v = report_verdicts_for_test(r);
  CHECK(v.find("different ticket keys") == std::string::npos);
  CHECK(v.find("tickets are opaque: ") != std::string::npos);
}

TEST_CASE("stunnel NO_TICKET: a ticket issued on a resumed connection is offered and fails") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  stunnel_server st(dir, pki, {"options = NO_TICKET"});
  auto o = quick(10);
  o.tls12 = false;
  o.per_target = 1;
  auto r = probe_port(st.port, o);
  INFO(st.tunnel.log());
  REQUIRE_FALSE(r.error);
  const auto& t13 = run_of(r, "TLSv1.3", "ticket");
  CHECK(t13.resumed == 10);  // the first session, offered each time, always resumes
  // Independently of the prober: openssl s_client offering the ticket it got on a resumed
  // connection gets a full handshake.
  std::string a = (dir.path() / "a.pem").string(), b = (dir.path() / "b.pem").string();
  const std::string connect = "127.0.0.1:" + std::to_string(st.port);
  const std::string req = "HEAD / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  run({"openssl", "s_client", "-connect", connect, "-tls1_3", "-sess_out", a, "-ign_eof"}, req, 20);
  auto second = run({"openssl", "s_client", "-connect", connect, "-tls1_3", "-sess_in", a,
                     "-sess_out", b, "-ign_eof"},
                    req, 20);
  auto third = run(
      {"openssl", "s_client", "-connect", connect, "-tls1_3", "-sess_in", b, "-ign_eof"}, req, 20);
  REQUIRE(second.out.find("\nReused, TLSv1.3") != std::string::npos);
  REQUIRE(third.out.find("\nNew, TLSv1.3") != std::string::npos);
  // The chain: a resumed attempt's ticket (full), the full handshake's ticket (resumed), ...
  CHECK(t13.chain_outcomes == std::vector<bool>{false, true, false, true});
  CHECK(t13.chain_resumed == 2);
  auto v = report_verdicts_for_test(r);
  CHECK(v.find("offering the newest ticket each time gives full, resumed, full, resumed") !=
        std::string::npos);
}

TEST_CASE("openssl s_server -no_cache: no session ID, so the session-ID run offers nothing") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  int port = free_port();
  server_process srv({"openssl", "s_server", "-accept", "127.0.0.1:" + std::to_string(port),
                      "-cert", pki.leaf_cert, "-key", pki.leaf_key, "-cert_chain", pki.chain,
                      "-www", "-quiet", "-no_cache"},
                     (dir.path() / "s_server.log").string(), port);
  auto j = ngxtls_json({"probe", "127.0.0.1:" + std::to_string(port), "--sni", "localhost",
                        "--tls1.2", "--no-ocsp", "--no-http", "-n", "5"});
  const auto& runs = j.at("targets").at(0).at("protocols");
  bool found = false;
  for (const auto& run : runs) {
    if (run.at("mechanism") != "session_id") continue;
    found = true;
    // docs/probe-json.md: nothing to resume means session_offered false and attempts 0.
    CHECK(run.at("session_id_issued") == false);
    CHECK(run.at("session_offered") == false);
    CHECK(run.at("attempts") == 0);
  }
  CHECK(found);
  std::string verdicts = j.at("targets").at(0).at("verdicts").dump();
  CHECK(verdicts.find("the server sent no session ID") != std::string::npos);
  CHECK(verdicts.find("keeps no session cache") == std::string::npos);
}
