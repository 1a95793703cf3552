// The prober against the real nginx 1.22.1 (Debian package): resumption per protocol and
// mechanism, ticket key names, worker and instance effects (docs/nginx-facts.md, facts 1 to 4).
#include <doctest/doctest.h>

#include "probe_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

struct site {
  temp_dir dir;
  tls::pki_paths pki = tls::make_pki((dir.path() / "pki").string(), {});
};

void check_defaults(bool reuseport) {
  site s;
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(4, tls_server(port, s.pki, "", reuseport ? "reuseport" : "")), no);
  auto r = probe_port(port, quick(20));
  REQUIRE_FALSE(r.error);
  REQUIRE(r.protocols.size() == 3);
  const auto& t13 = run_of(r, "TLSv1.3", "ticket");
  const auto& t12 = run_of(r, "TLSv1.2", "ticket");
  const auto& id12 = run_of(r, "TLSv1.2", "session_id");
  // docs/nginx-facts.md#workers-share-ticket-keys: one master's workers share the auto ticket key,
  // with or without reuseport.
  CHECK(t13.attempts == 20);
  CHECK(t13.resumed == 20);
  CHECK(t13.rate == 1.0);
  CHECK(t13.ticket_key_names.size() == 1);
  CHECK(t13.stateless_tickets == t13.tickets);
  CHECK(t13.max_tickets_per_connection == 2);  // OpenSSL sends 2 tickets after a full handshake
  CHECK(t13.negotiated_protocol == "TLSv1.3");
  CHECK(t12.resumed == 20);
  CHECK(t12.ticket_key_names.size() == 1);
  CHECK(t12.ticket_key_names.begin()->first ==
        t13.ticket_key_names.begin()->first);  // one key per SSL_CTX
  CHECK(t12.negotiated_protocol == "TLSv1.2");
  // docs/nginx-facts.md#session-id-cache: no session cache by default, so session IDs never resume.
  CHECK(id12.attempts == 20);
  CHECK(id12.resumed == 0);
  CHECK(id12.tickets == 0);
  CHECK(r.certificate);
  CHECK(r.certificate->subject == "CN=localhost");
  CHECK(r.certificate->key_type == "EC");
  CHECK(r.certificate->key_bits == 256);
  CHECK_FALSE(r.certificate->ocsp_url_present);
  CHECK(r.certificate->days_to_expiry > 363);
  CHECK(r.certificate->days_to_expiry < 366);
}

}  // namespace

TEST_CASE(
    "nginx defaults with 4 workers resume TLS 1.3 and TLS 1.2 tickets 100% with one key, session "
    "IDs 0%") {
  check_defaults(false);
}

TEST_CASE(
    "nginx defaults with 4 workers and reuseport still share one ticket key (reuseport is no "
    "hazard)") {
  check_defaults(true);
}

TEST_CASE("tickets off without a session cache: TLS 1.3 stateful tickets arrive but never resume") {
  site s;
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(4, tls_server(port, s.pki, "ssl_session_tickets off;")), no);
  auto o = quick(20);
  o.tls12 = false;
  auto r = probe_port(port, o);
  REQUIRE_FALSE(r.error);
  const auto& t13 = run_of(r, "TLSv1.3", "ticket");
  // docs/nginx-facts.md#tickets-off-tls13 / case B01: 0 of N, although each full handshake brings 2
  // tickets of 32 bytes.
  CHECK(t13.attempts == 20);
  CHECK(t13.resumed == 0);
  CHECK(t13.tickets == 2 * t13.connections);
  CHECK(t13.stateful_tickets == t13.tickets);
  CHECK(t13.ticket_max_bytes == 32);
  CHECK(t13.ticket_min_bytes == 32);
  CHECK(t13.ticket_key_names.empty());  // a session ID is no key name
  auto verdicts = report_verdicts_for_test(r);
  CHECK(verdicts.find("stateful") != std::string::npos);
}

TEST_CASE("tickets off with a shared cache: TLS 1.3 resumes 100% through stateful tickets") {
  site s;
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(
      nginx_conf(
          4, tls_server(port, s.pki, "ssl_session_tickets off; ssl_session_cache shared:SSL:1m;")),
      no);
  auto r = probe_port(port, quick(20));
  REQUIRE_FALSE(r.error);
  const auto& t13 = run_of(r, "TLSv1.3", "ticket");
  CHECK(t13.resumed == 20);
  CHECK(t13.stateful_tickets == t13.tickets);
  CHECK(t13.tickets > 0);
  // Case C01: TLS 1.2 with tickets off and a shared cache: no ticket, session IDs resume.
  const auto& t12 = run_of(r, "TLSv1.2", "ticket");
  CHECK_FALSE(t12.session_offered);
  CHECK(t12.tickets == 0);
  const auto& id12 = run_of(r, "TLSv1.2", "session_id");
  CHECK(id12.resumed == 20);
}

TEST_CASE(
    "builtin cache with 4 workers and reuseport: session IDs resume only on the worker that made "
    "them") {
  site s;
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(
      nginx_conf(4,
                 tls_server(port, s.pki, "ssl_session_tickets off; ssl_session_cache builtin:1000;",
                            "reuseport")),
      no);
  auto o = quick(80);
  o.tls13 = false;
  auto r = probe_port(port, o);
  REQUIRE_FALSE(r.error);
  const auto& id12 = run_of(r, "TLSv1.2", "session_id");
  // Model: with reuseport the kernel picks one of the 4 workers' sockets by a hash of the
  // connection's 4-tuple, so each attempt lands on the worker holding the session with
  // p = 1/4, independently: resumed ~ Binomial(n = 80, p = 1/4), mean 20, sd 3.9.
  // P(X <= 3) = 3.5e-7 and P(X >= 41) = 4.2e-7, so [4, 40] fails falsely with p < 1e-6.
  // (docs/nginx-facts.md#session-id-cache measured 10-16 of 40.)
  CHECK(id12.attempts == 80);
  CHECK(id12.resumed >= 4);
  CHECK(id12.resumed <= 40);
  MESSAGE("builtin cache, 4 workers, reuseport: " << id12.resumed << " of " << id12.attempts
                                                  << " resumed");
}

TEST_CASE(
    "two nginx masters on one port with reuseport: unshared ticket keys give a partial rate and "
    "two key names") {
  site s;
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  std::string conf = nginx_conf(1, tls_server(port, s.pki, "", "reuseport"));
  nginx_instance a(conf, no);
  nginx_instance b(conf, no);
  auto r = probe_port(port, quick(40));
  REQUIRE_FALSE(r.error);
  // Model: each master holds one reuseport socket, so an attempt lands on the master that
  // sealed the ticket with p = 1/2: resumed ~ Binomial(40, 1/2); P(X <= 4) = P(X >= 36) =
  // 9.3e-8, so [5, 35] fails falsely with p < 2e-7 (docs/nginx-facts.md#ticket-keys-per-instance:
  // "expect about 1/N").
  for (const char* proto : {"TLSv1.3", "TLSv1.2"}) {
    CAPTURE(proto);
    const auto& run = run_of(r, proto, "ticket");
    CHECK(run.resumed >= 5);
    CHECK(run.resumed <= 35);
    // Attempts on the other master do full handshakes and bring tickets sealed there:
    // both key names repeat (P(fewer than 2 such attempts) < 1e-10).
    CHECK(run.ticket_key_names.size() == 2);
    MESSAGE(std::string(proto) << " two masters: " << run.resumed << "/" << run.attempts
                               << ", key names " << run.ticket_key_names.size());
  }
  auto verdicts = report_verdicts_for_test(r);
  CHECK(verdicts.find("2 different ticket keys") != std::string::npos);
}

TEST_CASE("two nginx masters sharing one ticket key file resume 100% with one key name") {
  site s;
  int port = free_port();
  std::string key_name = tls::write_ticket_key_file((s.dir.path() / "shared.key").string(), 80);
  nginx_options no;
  no.wait_ports = {port};
  std::string conf = nginx_conf(
      1, tls_server(port, s.pki,
                    "ssl_session_ticket_key " + (s.dir.path() / "shared.key").string() + ";",
                    "reuseport"));
  nginx_instance a(conf, no);
  nginx_instance b(conf, no);
  auto r = probe_port(port, quick(40));
  REQUIRE_FALSE(r.error);
  for (const char* proto : {"TLSv1.3", "TLSv1.2"}) {
    CAPTURE(proto);
    const auto& run = run_of(r, proto, "ticket");
    CHECK(run.resumed == 40);
    REQUIRE(run.ticket_key_names.size() == 1);
    CHECK(run.ticket_key_names.begin()->first == key_name);
  }
}
