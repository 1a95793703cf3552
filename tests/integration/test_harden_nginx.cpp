// ngxtls harden snippets on the real nginx (Debian, /usr/sbin/nginx 1.22.1 with OpenSSL 3.0):
// every snippet whose target this nginx can run passes `nginx -t` without a warning, and
// resumes 100% for every protocol its profile enables, on one master and (fleet mode) on two
// masters sharing one port through reuseport. The printed rotation procedure, run step by step,
// never breaks resumption. Certificates and ticket keys are generated per test.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "harden/harden.hpp"
#include "probe_util.hpp"
#include "report/harden_output.hpp"
#include "support/nginx_run.hpp"

using namespace ngxtls;
using namespace ngxtls::test;
using harden::tickets_mode;

namespace {

// Certificates (EC P-256 leaf via an intermediate, optionally with an OCSP URL) and the two
// ticket key files of fleet mode, under one temporary directory.
struct material {
  temp_dir dir;
  tls::pki_paths pki;
  std::string key_dir;
  std::string
      current_name;  // key name (first 16 bytes, hex) of current.key, compared, never printed
  explicit material(std::optional<std::string> ocsp_url = std::nullopt) {
    tls::pki_options po;
    po.ocsp_url = ocsp_url;
    pki = tls::make_pki((dir.path() / "pki").string(), po);
    key_dir = (dir.path() / "tickets").string();
    std::filesystem::create_directories(key_dir);
    current_name = tls::write_ticket_key_file(key_dir + "/current.key", 80);
    tls::write_ticket_key_file(key_dir + "/previous.key", 80);
  }
};

harden::snippet make(const material& m, const std::string& profile, tickets_mode mode,
                     const std::string& nginx, int port, const std::string& listen_flags = "") {
  harden::harden_options o;
  o.profile = profile;
  o.nginx = *model::version::parse(nginx);
  o.openssl = {3, 0, 0};
  o.tickets = mode;
  if (mode == tickets_mode::fleet) o.ticket_key_dir = m.key_dir;
  o.cert_file = m.pki.chain;
  o.key_file = m.pki.leaf_key;
  o.trusted_certificate = m.pki.root_cert;
  o.listen = {"127.0.0.1:" + std::to_string(port)};
  o.listen_flags = listen_flags;
  return harden::generate(o);
}

// The snippet as a user pastes it into an http block, inside a complete nginx.conf.
std::string full_conf(const harden::snippet& s) {
  report::harden_text_options t;
  t.http_block = false;
  return nginx_conf(2, report::harden_text(s, t));
}

command_result nginx_t(const temp_dir& prefix, const std::string& conf) {
  prefix.write("nginx.conf", conf);
  const std::string p = prefix.path().string() + "/";
  return run_nginx({"/usr/sbin/nginx", "-t", "-p", p, "-c", p + "nginx.conf"}, "", 20);
}

probe::probe_options probe_opts(int attempts, int in_flight = 4) {
  auto o = quick(attempts);
  o.per_target = in_flight;
  return o;
}

void print_runs(const std::string& label, const probe::target_result& t) {
  for (const auto& r : t.protocols)
    std::printf("[harden] %s: %s/%s %s: %d/%d resumed%s\n", label.c_str(),
                probe::to_string(r.protocol).c_str(), probe::to_string(r.mechanism).c_str(),
                r.supported ? "supported" : "refused", r.resumed, r.attempts,
                r.error ? (" (" + *r.error + ")").c_str() : "");
}

// Every protocol the profile enables resumes every attempt; the others are refused.
void check_full_resumption(const std::string& profile, const probe::target_result& t,
                           bool session_ids = true) {
  REQUIRE_FALSE(t.error.has_value());
  const auto& r13 = run_of(t, "TLSv1.3", "ticket");
  CHECK(r13.supported);
  CHECK(r13.attempts > 0);
  CHECK(r13.resumed == r13.attempts);
  const auto& r12t = run_of(t, "TLSv1.2", "ticket");
  const auto& r12i = run_of(t, "TLSv1.2", "session_id");
  if (profile == "modern") {
    CHECK_FALSE(r12t.supported);
    CHECK_FALSE(r12i.supported);
    return;
  }
  CHECK(r12t.supported);
  CHECK(r12t.attempts > 0);
  CHECK(r12t.resumed == r12t.attempts);
  if (session_ids) {
    CHECK(r12i.attempts > 0);
    CHECK(r12i.resumed == r12i.attempts);
  }
}

}  // namespace

TEST_CASE(
    "harden snippets for nginx 1.18 and 1.22.1 with OpenSSL 3.0 pass the real nginx -t without "
    "warnings") {
  material m;
  for (const std::string profile : {"modern", "intermediate"})
    for (auto mode : {tickets_mode::fleet, tickets_mode::host})
      for (const std::string nv : {"1.18.0", "1.22.1"}) {
        CAPTURE(profile);
        CAPTURE(harden::to_string(mode));
        CAPTURE(nv);
        temp_dir prefix;
        auto r = nginx_t(prefix, full_conf(make(m, profile, mode, nv, free_port())));
        CAPTURE(r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.err.find("[warn]") == std::string::npos);
        CHECK(r.err.find("[emerg]") == std::string::npos);
      }
}

TEST_CASE("a snippet for nginx 1.25.1 is what nginx 1.22.1 rejects: the version rules matter") {
  material m;
  temp_dir prefix;
  auto r = nginx_t(prefix,
                   full_conf(make(m, "intermediate", tickets_mode::fleet, "1.25.1", free_port())));
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("unknown directive \"http2\"") != std::string::npos);
}

TEST_CASE(
    "OCSP auto: a certificate with a responder URL gets stapling that nginx -t accepts without a "
    "warning") {
  material m("http://127.0.0.1:9/");
  temp_dir prefix;
  auto s = make(m, "intermediate", tickets_mode::fleet, "1.22.1", free_port());
  REQUIRE(s.stapling);
  auto r = nginx_t(prefix, full_conf(s));
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("[warn]") == std::string::npos);
}

TEST_CASE(
    "harden snippets resume 100% for every protocol their profile enables (nginx 1.22.1, one "
    "master)") {
  for (const std::string profile : {"modern", "intermediate"})
    for (auto mode : {tickets_mode::fleet, tickets_mode::host}) {
      CAPTURE(profile);
      CAPTURE(harden::to_string(mode));
      material m;
      int port = free_port();
      nginx_options no;
      no.wait_ports = {port};
      nginx_instance ngx(full_conf(make(m, profile, mode, "1.22.1", port)), no);
      auto t = probe_port(port, probe_opts(20));
      print_runs(profile + "/" + harden::to_string(mode) + " one master", t);
      check_full_resumption(profile, t);
      if (mode == tickets_mode::fleet) {
        // current.key seals every ticket: it is listed first
        // (docs/nginx-facts.md#ticket-key-rotation).
        const auto& r13 = run_of(t, "TLSv1.3", "ticket");
        CHECK(r13.ticket_key_names.size() == 1);
        CHECK(r13.ticket_key_names.count(m.current_name) == 1);
      }
    }
}

TEST_CASE(
    "fleet snippets resume 100% across two nginx masters on one port (reuseport, same key files)") {
  for (const std::string profile : {"modern", "intermediate"}) {
    CAPTURE(profile);
    material m;
    int port = free_port();
    nginx_options no;
    no.wait_ports = {port};
    const std::string conf =
        full_conf(make(m, profile, tickets_mode::fleet, "1.22.1", port, "reuseport"));
    nginx_instance a(conf, no);
    nginx_instance b(conf, no);
    auto t = probe_port(port, probe_opts(40));
    print_runs(profile + "/fleet two masters", t);
    // Tickets resume everywhere; session IDs live in each master's own cache
    // (docs/nginx-facts.md#ticket-keys-per-instance).
    check_full_resumption(profile, t, /*session_ids=*/false);
    const auto& r13 = run_of(t, "TLSv1.3", "ticket");
    CHECK(r13.ticket_key_names.size() == 1);
    CHECK(r13.ticket_key_names.count(m.current_name) == 1);
  }
}

TEST_CASE(
    "control: host-mode snippets on two masters do not resume everywhere (both masters serve)") {
  material m;
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  const std::string conf =
      full_conf(make(m, "intermediate", tickets_mode::host, "1.22.1", port, "reuseport"));
  nginx_instance a(conf, no);
  nginx_instance b(conf, no);
  auto t = probe_port(port, probe_opts(40));
  print_runs("intermediate/host two masters (control)", t);
  const auto& r13 = run_of(t, "TLSv1.3", "ticket");
  CHECK(r13.attempts == 40);
  CHECK(r13.resumed < r13.attempts);  // each master has its own keys: about 1/2
                                      // (docs/nginx-facts.md#ticket-keys-per-instance)
}

TEST_CASE("the printed rotation procedure, run step by step, never breaks resumption") {
  material m;
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  auto s = make(m, "intermediate", tickets_mode::fleet, "1.22.1", port);
  REQUIRE(s.rotation.size() >= 5);
  nginx_instance ngx(full_conf(s), no);

  // Saved sessions per protocol and step; each must resume after every later step.
  std::map<std::string, std::vector<std::string>> saved;  // protocol -> session files
  auto save = [&](const std::string& proto, const std::string& label) {
    auto o = probe_opts(2);
    o.tls13 = proto == "TLSv1.3";
    o.tls12 = proto == "TLSv1.2";
    const std::string f = (m.dir.path() / (label + "-" + proto + ".pem")).string();
    o.sess_out = f;
    auto t = probe_port(port, o);
    REQUIRE_FALSE(t.error.has_value());
    saved[proto].push_back(f);
  };
  auto all_resume = [&](const std::string& step) {
    for (const auto& [proto, files] : saved)
      for (const auto& f : files) {
        CAPTURE(step);
        // CAPTURE's lambda cannot capture a structured binding under clang 14: a named reference.
        const auto& proto_shown = proto;
        CAPTURE(proto_shown);
        CAPTURE(f);
        auto o = probe_opts(5);
        o.sess_in = f;
        auto t = probe_port(port, o);
        REQUIRE_FALSE(t.error.has_value());
        REQUIRE(t.protocols.size() == 1);
        const auto& r = t.protocols.front();
        std::printf("[harden] rotation %s: %s session %s: %d/%d resumed\n", step.c_str(),
                    proto.c_str(), std::filesystem::path(f).filename().c_str(), r.resumed,
                    r.attempts);
        CHECK(r.attempts == 5);
        CHECK(r.resumed == 5);
      }
  };
  // Runs a step's shell commands in the key directory; nginx itself is reloaded by the test.
  auto run_step = [&](std::size_t index) {
    const auto& step = s.rotation.at(index);
    CAPTURE(step.title);
    for (const auto& c : step.commands) {
      if (c.rfind("nginx ", 0) == 0 || c.rfind("#", 0) == 0) continue;
      auto r =
          run({"/bin/sh", "-c", "cd '" + m.dir.path().string() + "' && umask 077 && " + c}, "", 20);
      CAPTURE(c);
      CAPTURE(r.err);
      REQUIRE(r.exit_code == 0);
    }
    ngx.reload();
  };
  // Steps are numbered from 1 (keys exist, so there is no step 0).
  REQUIRE(s.rotation.at(0).title.rfind("1.", 0) == 0);
  for (const std::string proto : {"TLSv1.3", "TLSv1.2"}) save(proto, "before");
  run_step(0);  // 1. make next.key
  struct stat st {};
  REQUIRE(::stat((m.dir.path() / "next.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_size == 80);
  run_step(1);  // 2. [CURRENT, NEW]
  all_resume("after step 2 [CURRENT, NEW]");
  for (const std::string proto : {"TLSv1.3", "TLSv1.2"}) save(proto, "step2");
  run_step(2);  // 3. check (sha256sum)
  run_step(3);  // 4. [NEW, CURRENT]
  all_resume("after step 4 [NEW, CURRENT]");
  CHECK_FALSE(std::filesystem::exists(m.dir.path() / "next.key"));  // shredded
  REQUIRE(::stat((m.key_dir + "/current.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE(
    "hosts between rotation steps 2 and 4 ([CURRENT, NEW] and [NEW, CURRENT]) resume 100% across "
    "each other") {
  material m;  // key_dir: current.key = K1, previous.key = K2 (the new key, decrypt-only): step 2
  // The second host has promoted already: its current.key is K2, its previous.key K1 (step 4).
  const auto promoted = m.dir.path() / "promoted";
  std::filesystem::create_directories(promoted);
  std::filesystem::copy_file(m.key_dir + "/previous.key", promoted / "current.key");
  std::filesystem::copy_file(m.key_dir + "/current.key", promoted / "previous.key");
  std::filesystem::permissions(promoted / "current.key", std::filesystem::perms::owner_read |
                                                             std::filesystem::perms::owner_write);
  std::filesystem::permissions(promoted / "previous.key", std::filesystem::perms::owner_read |
                                                              std::filesystem::perms::owner_write);
  const std::string k2_name =
      tls::inspect_ticket_key_file((promoted / "current.key").string()).key_name_hex;

  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  auto step2 = make(m, "intermediate", tickets_mode::fleet, "1.22.1", port, "reuseport");
  harden::harden_options o;
  o.nginx = {1, 22, 1};
  o.openssl = {3, 0, 0};
  o.ticket_key_dir = promoted.string();
  o.cert_file = m.pki.chain;
  o.key_file = m.pki.leaf_key;
  o.listen = {"127.0.0.1:" + std::to_string(port)};
  o.listen_flags = "reuseport";
  auto step4 = harden::generate(o);
  nginx_instance a(full_conf(step2), no);
  nginx_instance b(full_conf(step4), no);
  auto t = probe_port(port, probe_opts(40));
  print_runs("intermediate/fleet mid-rotation two masters", t);
  check_full_resumption("intermediate", t, /*session_ids=*/false);
  // Both hosts sealed tickets, each with its own first key: two key names, and still 100%.
  const auto& r13 = run_of(t, "TLSv1.3", "ticket");
  CHECK(r13.ticket_key_names.count(m.current_name) == 1);
  CHECK(r13.ticket_key_names.count(k2_name) == 1);
}

TEST_CASE(
    "what host mode warns about on nginx 1.22.1: a reload drops its tickets, fleet key files "
    "survive it") {
  for (auto mode : {tickets_mode::host, tickets_mode::fleet}) {
    CAPTURE(harden::to_string(mode));
    material m;
    int port = free_port();
    nginx_options no;
    no.wait_ports = {port};
    auto s = make(m, "intermediate", mode, "1.22.1", port);
    nginx_instance ngx(full_conf(s), no);
    auto o = probe_opts(2);
    o.tls12 = false;
    const std::string f = (m.dir.path() / "session.pem").string();
    o.sess_out = f;
    REQUIRE_FALSE(probe_port(port, o).error.has_value());
    ngx.reload();
    auto in = probe_opts(5);
    in.sess_in = f;
    auto t = probe_port(port, in);
    REQUIRE_FALSE(t.error.has_value());
    REQUIRE(t.protocols.size() == 1);
    const auto& r = t.protocols.front();
    std::printf("[harden] intermediate/%s after reload: TLSv1.3 saved ticket %d/%d resumed\n",
                harden::to_string(mode).c_str(), r.resumed, r.attempts);
    CHECK(r.attempts == 5);
    CHECK(r.resumed ==
          (mode == tickets_mode::fleet ? 5 : 0));  // docs/nginx-facts.md#ticket-keys-per-instance
  }
}
