// Hostile servers: each ends as a clear error for its target within the timeout, never a hang,
// and the CLI exits with code 3.
#include <doctest/doctest.h>

#include "probe_util.hpp"
#include "support/server_process.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

const char* hostile_server = R"PY(
import socket, ssl, struct, sys, threading, time
mode, port = sys.argv[1], int(sys.argv[2])
ctx = None
if len(sys.argv) > 4:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    chain = sys.argv[3]
    if mode == "bigchain":
        # The leaf and its intermediate, then the intermediate 300 times more (> 100 KiB).
        pem = open(chain).read()
        inter = pem[pem.index("-----END CERTIFICATE-----") + 26:]
        chain = sys.argv[3] + ".big"
        open(chain, "w").write(pem + inter * 300)
    ctx.load_cert_chain(chain, sys.argv[4])
    if mode == "tickets":
        ctx.num_tickets = 1000  # TLS 1.3 NewSessionTicket messages after the handshake
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(64)
def handle(c):
    try:
        if mode == "stall":
            time.sleep(120)
        elif mode == "garbage":
            c.recv(4096)
            c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n" + bytes(range(256)) * 8)
            time.sleep(120)
        elif mode == "reset":
            c.recv(4096)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()
        elif mode == "endless":
            s = ctx.wrap_socket(c, server_side=True)
            chunk = b"x" * 16384
            while True:
                s.sendall(chunk)
        elif mode in ("tickets", "bigchain"):
            s = ctx.wrap_socket(c, server_side=True)
            s.recv(4096)
            time.sleep(120)
        elif mode == "answer":
            s = ctx.wrap_socket(c, server_side=True)
            s.recv(4096)
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            s.close()
        elif mode == "trickle":
            s = ctx.wrap_socket(c, server_side=True)
            while True:
                s.sendall(b"x")
                time.sleep(0.1)
    except Exception:
        pass
while True:
    c, _ = srv.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
)PY";

struct hostile {
  temp_dir dir;
  tls::pki_paths pki;
  int port = free_port();
  std::unique_ptr<server_process> srv;
  explicit hostile(const std::string& mode, const tls::pki_options& options = {})
      : pki(tls::make_pki((dir.path() / "pki").string(), options)) {
    auto script = dir.write("hostile.py", hostile_server);
    srv = std::make_unique<server_process>(
        std::vector<std::string>{"/usr/bin/python3", script.string(), mode, std::to_string(port),
                                 pki.chain, pki.leaf_key},
        (dir.path() / "hostile.log").string(), port);
  }
};

// Runs the CLI against the hostile server with --timeout 1000 and checks exit code 3, the
// error text, and that it ended in time: one connection timeout plus slack.
void expect_clean_failure(const std::string& mode, const std::string& expected) {
  hostile h(mode);
  auto t0 = std::chrono::steady_clock::now();
  int rc = -1;
  std::string err;
  auto j = ngxtls_json(
      {"probe", "127.0.0.1:" + std::to_string(h.port), "--timeout", "1000", "-n", "5"}, &rc, &err);
  double ms = ms_since(t0);
  CAPTURE(err);
  CHECK(rc == 3);
  const auto& t = j.at("targets").at(0);
  REQUIRE(t.at("error").is_string());
  std::string e = t.at("error");
  CAPTURE(e);
  CHECK(e.find(expected) != std::string::npos);
  CHECK(err.find("cannot probe") != std::string::npos);
  CHECK(ms < 4000);
  MESSAGE(mode << ": " << e << " (" << ms << " ms)");
}

}  // namespace

TEST_CASE("a server that accepts and stalls ends as a handshake timeout") {
  expect_clean_failure("stall", "TLS handshake timed out after 1000 ms");
}

TEST_CASE("a server that answers with garbage bytes ends as 'did not answer with TLS'") {
  expect_clean_failure("garbage", "did not answer with TLS");
}

TEST_CASE("a server that resets the connection ends as a reset error") {
  expect_clean_failure("reset", "reset");
}

TEST_CASE("a server that streams endless data after the handshake ends at the byte bound") {
  expect_clean_failure("endless", "endless data");
}

TEST_CASE("a server that trickles its response ends at the per-connection timeout") {
  expect_clean_failure("trickle", "did not finish its response within 1000 ms");
}

TEST_CASE("a server that sends endless session tickets ends at the ticket bound") {
  expect_clean_failure("tickets",
                       "more than 64 session tickets on one connection (endless tickets)");
}

TEST_CASE("a certificate chain over 100 KiB ends the handshake") {
  expect_clean_failure("bigchain", "excessive message size");
}

TEST_CASE("a closed port ends as connection refused, exit code 3") {
  int rc = -1;
  std::string err;
  auto j = ngxtls_json({"probe", "127.0.0.1:" + std::to_string(free_port())}, &rc, &err);
  CHECK(rc == 3);
  std::string e = j.at("targets").at(0).at("error");
  CHECK(e.find("Connection refused") != std::string::npos);
}

TEST_CASE("text output escapes the peer's strings: no terminal control, no forged line") {
  // The certificate is the server's to choose: its OCSP URL carries an escape sequence that
  // would clear the screen and a line feed that would start a line of the report.
  tls::pki_options options;
  options.ocsp_url = "http://127.0.0.1/\x1b[2J\nFORGED resumption works";
  hostile h("answer", options);
  auto r = run({ngxtls_binary(), "probe", "127.0.0.1:" + std::to_string(h.port), "--sni",
                "local\x1b[31mhost", "-n", "1", "--no-ocsp", "--tls1.3"},
               "", 60);
  CAPTURE(r.out);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(r.out.find("\nFORGED") == std::string::npos);
  CHECK(r.out.find("OCSP URL http://127.0.0.1/\\x1b[2J\\x0aFORGED resumption works\n") !=
        std::string::npos);
  CHECK(r.out.find("SNI local\\x1b[31mhost)") != std::string::npos);
}
