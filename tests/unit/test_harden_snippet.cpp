// ngxtls harden: profile data (Mozilla Server Side TLS 6.0) and the version rules of the
// generated snippet, for every profile x tickets mode x a spread of nginx/OpenSSL versions.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "harden/harden.hpp"
#include "report/harden_output.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"
#include "tls/ticket_key.hpp"

using namespace ngxtls;
using namespace ngxtls::test;
using harden::ocsp_mode;
using harden::tickets_mode;

namespace {

const std::vector<std::string> nginx_versions = {"1.18.0", "1.22.1", "1.25.1", "1.27.3", "1.29.2"};
const std::vector<std::string> openssl_versions = {"3.0.0", "3.5.0"};
const std::string intermediate_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

model::version ver(const std::string& v) {
  return *model::version::parse(v);
}

harden::harden_options opts(const std::string& profile, tickets_mode t, const std::string& nginx,
                            const std::string& openssl,
                            const std::string& key_dir = "/etc/nginx/tickets") {
  harden::harden_options o;
  o.profile = profile;
  o.nginx = ver(nginx);
  o.openssl = ver(openssl);
  o.tickets = t;
  if (t == tickets_mode::fleet) o.ticket_key_dir = key_dir;
  o.ocsp = ocsp_mode::off;
  return o;
}

// The directive lines of the config part (no header), without their trailing comments.
std::vector<std::string> directives(const harden::snippet& s) {
  std::vector<std::string> out;
  for (const auto& l : s.lines)
    if (!l.directive.empty()) out.push_back(l.directive);
  return out;
}

bool has_directive(const harden::snippet& s, const std::string& d) {
  auto v = directives(s);
  return std::find(v.begin(), v.end(), d) != v.end();
}

bool starts_any(const harden::snippet& s, const std::string& prefix) {
  for (const auto& d : directives(s))
    if (d.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("profiles hold Mozilla Server Side TLS 6.0 data") {
  CHECK(harden::profile_names() == std::vector<std::string>{"intermediate", "modern"});
  auto im = harden::load_profile("intermediate");
  CHECK(im.guideline == "Mozilla Server Side TLS 6.0");
  CHECK(im.protocols == std::vector<std::string>{"TLSv1.2", "TLSv1.3"});
  std::string ciphers;
  for (const auto& c : im.ciphers) ciphers += (ciphers.empty() ? "" : ":") + c;
  CHECK(ciphers == intermediate_ciphers);
  CHECK(im.ciphersuites == std::vector<std::string>{"TLS_AES_128_GCM_SHA256",
                                                    "TLS_AES_256_GCM_SHA384",
                                                    "TLS_CHACHA20_POLY1305_SHA256"});
  REQUIRE(im.curves.size() == 4);
  CHECK(im.curves[0].name == "X25519MLKEM768");
  CHECK(im.curves[0].min_openssl == model::version{3, 5, 0});
  CHECK(im.curves[1].name == "X25519");
  CHECK(im.curves[2].name == "prime256v1");
  CHECK(im.curves[3].name == "secp384r1");
  CHECK(im.hsts_max_age_s == 63072000);  // two years
  CHECK(im.session_timeout == "1d");
  CHECK(im.session_timeout_s == 86400);
  CHECK_FALSE(im.prefer_server_ciphers);
  CHECK(im.ocsp_staple);

  auto mo = harden::load_profile("modern");
  CHECK(mo.protocols == std::vector<std::string>{"TLSv1.3"});
  CHECK(mo.ciphers.empty());
  CHECK(mo.hsts_max_age_s == 63072000);
  // Where we differ from Mozilla, the profile says why.
  for (const auto* p : {&im, &mo}) {
    bool tickets = false;
    for (const auto& d : p->differences)
      if (d.topic == "session tickets")
        tickets = has(d.why, "docs/nginx-facts.md#tickets-off-tls13");
    CHECK_MESSAGE(tickets, p->name);
  }
}

TEST_CASE("the compiled-in profiles are byte for byte the .toml files") {
  for (const auto& name : harden::profile_names()) {
    CAPTURE(name);
    CHECK(std::string(harden::profile_text(name)) ==
          read_file(source_dir() / "rules/profiles" / (name + ".toml")));
  }
  CHECK_THROWS_AS(harden::load_profile("old"), usage_error);
}

TEST_CASE("a malformed profile is an input error with a location") {
  CHECK_THROWS_AS(harden::parse_profile("name = \"x\"\n", "x.toml"), input_error);
  CHECK_THROWS_AS(harden::parse_profile("name = [\n", "x.toml"), input_error);
}

TEST_CASE("session cache is sized at about 4,000 sessions per MB") {
  CHECK(harden::cache_size_mb(40000) == 10);
  CHECK(harden::cache_size_mb(40001) == 11);
  CHECK(harden::cache_size_mb(1) == 1);
  CHECK(harden::cache_size_mb(0) == 1);
}

TEST_CASE("every profile x tickets mode x nginx x OpenSSL follows the version rules") {
  for (const std::string profile : {"modern", "intermediate"})
    for (auto mode : {tickets_mode::fleet, tickets_mode::host})
      for (const auto& nv : nginx_versions)
        for (const auto& ov : openssl_versions) {
          CAPTURE(profile);
          CAPTURE(harden::to_string(mode));
          CAPTURE(nv);
          CAPTURE(ov);
          auto s = harden::generate(opts(profile, mode, nv, ov));
          const auto n = ver(nv), o = ver(ov);
          const std::string text = report::harden_text(s);
          report::harden_text_options bare;
          bare.header = false;
          const std::string config = report::harden_text(s, bare);

          // Never tickets off (docs/nginx-facts.md#tickets-off-tls13); tickets stated on; a shared
          // cache.
          CHECK_FALSE(has(config, "ssl_session_tickets off"));
          CHECK(has_directive(s, "ssl_session_tickets on;"));
          CHECK(has_directive(s, "ssl_session_cache shared:tls_sessions:10m;"));
          CHECK(has_directive(s, "ssl_session_timeout 1d;"));
          CHECK_FALSE(starts_any(s, "ssl_early_data"));
          // The `ssl` directive is gone from 1.25.1: never emitted.
          CHECK_FALSE(starts_any(s, "ssl on"));

          // Protocols and ciphers from the profile.
          if (profile == "modern") {
            CHECK(has_directive(s, "ssl_protocols TLSv1.3;"));
            CHECK_FALSE(starts_any(s, "ssl_ciphers"));
          } else {
            CHECK(has_directive(s, "ssl_protocols TLSv1.2 TLSv1.3;"));
            CHECK(has_directive(s, "ssl_ciphers " + intermediate_ciphers + ";"));
          }
          CHECK(has_directive(s, "ssl_prefer_server_ciphers off;"));

          // ML-KEM only where OpenSSL has it (3.5).
          if (o >= model::version{3, 5, 0})
            CHECK(has_directive(s, "ssl_ecdh_curve X25519MLKEM768:X25519:prime256v1:secp384r1;"));
          else {
            CHECK(has_directive(s, "ssl_ecdh_curve X25519:prime256v1:secp384r1;"));
            for (const auto& d : directives(s)) CHECK_FALSE(has(d, "X25519MLKEM768"));
          }

          // ssl_conf_command exists from nginx 1.19.4.
          if (n >= model::version{1, 19, 4})
            CHECK(has_directive(
                s,
                "ssl_conf_command Ciphersuites "
                "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256;"));
          else
            CHECK_FALSE(starts_any(s, "ssl_conf_command"));

          // HTTP/2: `http2 on` from 1.25.1, else a listen parameter.
          if (n >= model::version{1, 25, 1}) {
            CHECK(has_directive(s, "http2 on;"));
            CHECK(has_directive(s, "listen 443 ssl;"));
            CHECK(has_directive(s, "listen [::]:443 ssl;"));
            CHECK_FALSE(has(config, "ssl http2"));
          } else {
            CHECK(has_directive(s, "listen 443 ssl http2;"));
            CHECK(has_directive(s, "listen [::]:443 ssl http2;"));
            CHECK_FALSE(starts_any(s, "http2 on"));
          }
          CHECK(has_directive(s,
                              "add_header Strict-Transport-Security \"max-age=63072000\" always;"));

          // Resumption by mode.
          if (mode == tickets_mode::fleet) {
            auto d = directives(s);
            auto cur = std::find(d.begin(), d.end(),
                                 "ssl_session_ticket_key /etc/nginx/tickets/current.key;");
            auto prev = std::find(d.begin(), d.end(),
                                  "ssl_session_ticket_key /etc/nginx/tickets/previous.key;");
            REQUIRE(cur != d.end());
            REQUIRE(prev != d.end());
            CHECK(cur <
                  prev);  // only the first key encrypts (docs/nginx-facts.md#ticket-key-rotation)
            std::string procedure;
            for (const auto& st : s.rotation) {
              procedure += st.title + "\n";
              for (const auto& c : st.commands) procedure += c + "\n";
            }
            CHECK(has(procedure, "umask 077"));
            CHECK(has(procedure, "openssl rand 80 > next.key"));
            CHECK(has(procedure, "[CURRENT, NEW]"));
            CHECK(has(procedure, "[NEW, CURRENT]"));
            CHECK(procedure.find("[CURRENT, NEW]") < procedure.find("[NEW, CURRENT]"));
            CHECK(has(text, "Ticket key rotation"));
          } else {
            CHECK_FALSE(starts_any(s, "ssl_session_ticket_key"));
            CHECK(s.rotation.empty());
            std::string warnings;
            for (const auto& w : s.warnings) warnings += w + "\n";
            if (n >= model::version{1, 23, 2})
              CHECK(has(warnings, "never leave this host"));
            else
              CHECK(has(warnings, "every reload or restart drops every outstanding ticket"));
          }
          // Every line has its reason, in the text as a comment.
          for (const auto& l : s.lines) CHECK_FALSE(l.reason.empty());
        }
}

TEST_CASE("expected text of the intermediate fleet snippet for nginx 1.22.1 and OpenSSL 3.0") {
  auto s = harden::generate(opts("intermediate", tickets_mode::fleet, "1.22.1", "3.0.0"));
  report::harden_text_options t;
  t.header = false;
  std::string text = report::harden_text(s, t);
  // Strip the reasons: the directive sequence is the contract.
  std::string bare;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto first = line.find_first_not_of(' ');
    if (first != std::string::npos && line[first] == '#') continue;  // comment-only line
    auto hash = line.find("  #");
    if (hash != std::string::npos) line.erase(hash);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    bare += line + "\n";
  }
  CHECK(bare ==
        "http {\n"
        "    ssl_protocols TLSv1.2 TLSv1.3;\n"
        "    ssl_ecdh_curve X25519:prime256v1:secp384r1;\n"
        "    ssl_ciphers " +
            intermediate_ciphers +
            ";\n"
            "    ssl_conf_command Ciphersuites "
            "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256;\n"
            "    ssl_prefer_server_ciphers off;\n"
            "    ssl_session_cache shared:tls_sessions:10m;\n"
            "    ssl_session_timeout 1d;\n"
            "    ssl_session_tickets on;\n"
            "    ssl_session_ticket_key /etc/nginx/tickets/current.key;\n"
            "    ssl_session_ticket_key /etc/nginx/tickets/previous.key;\n"
            "\n"
            "    server {\n"
            "        listen 443 ssl http2;\n"
            "        listen [::]:443 ssl http2;\n"
            "        ssl_certificate /path/to/fullchain.pem;\n"
            "        ssl_certificate_key /path/to/privkey.pem;\n"
            "        add_header Strict-Transport-Security \"max-age=63072000\" always;\n"
            "    }\n"
            "}\n");
}

TEST_CASE("tickets default to fleet with a key directory, else host, and fleet needs a directory") {
  harden::harden_options o;
  o.nginx = ver("1.22.1");
  o.ocsp = ocsp_mode::off;
  CHECK(harden::generate(o).tickets == tickets_mode::host);
  o.ticket_key_dir = "/etc/nginx/tickets";
  CHECK(harden::generate(o).tickets == tickets_mode::fleet);
  o.ticket_key_dir.clear();
  o.tickets = tickets_mode::fleet;
  CHECK_THROWS_AS(harden::generate(o), usage_error);
}

TEST_CASE("TLS 1.3 needs OpenSSL 1.1.1: intermediate drops it with a warning, modern refuses") {
  auto s = harden::generate(opts("intermediate", tickets_mode::host, "1.22.1", "1.1.0"));
  CHECK(has_directive(s, "ssl_protocols TLSv1.2;"));
  CHECK_FALSE(starts_any(s, "ssl_conf_command"));
  CHECK_FALSE(s.warnings.empty());
  CHECK_THROWS_AS(harden::generate(opts("modern", tickets_mode::host, "1.22.1", "1.1.0")),
                  usage_error);
  CHECK_THROWS_AS(harden::generate(opts("modern", tickets_mode::host, "1.12.0", "3.0.0")),
                  usage_error);
}

TEST_CASE("the expected sessions size the shared cache") {
  auto o = opts("intermediate", tickets_mode::host, "1.27.3", "3.0.0");
  o.expected_sessions = 100000;
  auto s = harden::generate(o);
  CHECK(s.session_cache_mb == 25);
  CHECK(has_directive(s, "ssl_session_cache shared:tls_sessions:25m;"));
}

TEST_CASE("OCSP auto staples only a certificate that names a responder") {
  temp_dir dir;
  tls::pki_options with;
  with.ocsp_url = "http://127.0.0.1:9/";
  auto ocsp = tls::make_pki((dir.path() / "ocsp").string(), with);
  auto none = tls::make_pki((dir.path() / "none").string(), {});

  auto o = opts("intermediate", tickets_mode::host, "1.22.1", "3.0.0");
  o.ocsp = ocsp_mode::automatic;
  o.cert_file = ocsp.chain;
  o.trusted_certificate = ocsp.root_cert;
  auto s = harden::generate(o);
  CHECK(s.stapling);
  CHECK(has_directive(s, "ssl_stapling on;"));
  CHECK(has_directive(s, "ssl_stapling_verify on;"));
  CHECK(has_directive(s, "ssl_trusted_certificate " + ocsp.root_cert + ";"));
  CHECK(has_directive(s, "resolver 127.0.0.1;"));
  auto issuer_warning = [](const harden::snippet& sn) {
    for (const auto& w : sn.warnings)
      if (has(w, "issuer certificate not found")) return true;
    return false;
  };
  CHECK_FALSE(issuer_warning(s));

  // The leaf alone, without its issuer anywhere: nginx would ignore stapling
  // (docs/nginx-facts.md#ocsp-stapling-quiet).
  o.cert_file = ocsp.leaf_cert;
  o.trusted_certificate.clear();
  s = harden::generate(o);
  CHECK(s.stapling);
  CHECK(issuer_warning(s));
  o.trusted_certificate = ocsp.issuer;
  CHECK_FALSE(issuer_warning(harden::generate(o)));
  o.trusted_certificate = ocsp.root_cert;

  o.cert_file = none.chain;
  s = harden::generate(o);
  CHECK_FALSE(s.stapling);
  CHECK_FALSE(starts_any(s, "ssl_stapling"));
  std::string notes;
  for (const auto& n : s.notes) notes += n;
  CHECK(has(notes, "names no OCSP responder"));

  // No --cert: nothing to decide from, so no stapling.
  o.cert_file.clear();
  CHECK_FALSE(harden::generate(o).stapling);

  // on: forced, with a comment naming what it needs.
  o.ocsp = ocsp_mode::on;
  o.cert_file = none.chain;
  s = harden::generate(o);
  CHECK(s.stapling);
  bool named = false;
  for (const auto& l : s.lines)
    if (l.directive == "ssl_stapling on;")
      named = has(l.reason, "needs an OCSP URL") && has(l.reason, "resolver");
  CHECK(named);

  o.ocsp = ocsp_mode::off;
  o.cert_file = ocsp.chain;
  CHECK_FALSE(harden::generate(o).stapling);

  o.ocsp = ocsp_mode::automatic;
  o.cert_file = (dir.path() / "missing.pem").string();
  CHECK_THROWS_AS(harden::generate(o), input_error);
}

TEST_CASE("fleet mode inspects key files without printing key bytes") {
  temp_dir dir;
  auto keys = dir.path() / "tickets";
  std::filesystem::create_directories(keys);
  std::string cur_name = tls::write_ticket_key_file((keys / "current.key").string(), 80);
  std::string prev_name = tls::write_ticket_key_file((keys / "previous.key").string(), 80);
  auto o = opts("intermediate", tickets_mode::fleet, "1.22.1", "3.0.0", keys.string());
  auto s = harden::generate(o);
  CHECK(s.warnings.empty());
  std::string all = report::harden_text(s) + report::harden_json(s).dump();
  CHECK_FALSE(has(all, cur_name));
  CHECK_FALSE(has(all, prev_name));
  // The first-deployment step appears only when the keys are missing.
  CHECK_FALSE(has(s.rotation.front().title, "first deployment"));

  ::chmod((keys / "previous.key").c_str(), 0644);
  s = harden::generate(o);
  REQUIRE(s.warnings.size() == 1);
  CHECK(has(s.warnings[0], "readable by group or others"));

  auto empty = dir.path() / "empty";
  std::filesystem::create_directories(empty);
  s = harden::generate(
      opts("intermediate", tickets_mode::fleet, "1.22.1", "3.0.0", empty.string()));
  CHECK(has(s.rotation.front().title, "first deployment"));
  CHECK(has(s.warnings.at(0), "do not exist yet"));
}

TEST_CASE("the JSON record carries every line with its reason") {
  auto s = harden::generate(opts("modern", tickets_mode::fleet, "1.29.2", "3.5.0"));
  auto j = report::harden_json(s);
  CHECK(j.at("profile") == "modern");
  CHECK(j.at("nginx_version") == "1.29.2");
  CHECK(j.at("openssl_version") == "3.5.0");
  CHECK(j.at("tickets") == "fleet");
  CHECK(j.at("ticket_key_dir") == "/etc/nginx/tickets");
  CHECK(j.at("lines").size() == s.lines.size());
  bool curve = false;
  for (const auto& l : j.at("lines")) {
    CHECK(l.at("reason").get<std::string>().size() > 0);
    if (!l.at("directive").is_null() &&
        l.at("directive") == "ssl_ecdh_curve X25519MLKEM768:X25519:prime256v1:secp384r1;")
      curve = true;
  }
  CHECK(curve);
  CHECK(j.at("rotation").size() >= 5);
  CHECK(has(j.at("config").get<std::string>(), "http2 on;"));
}
