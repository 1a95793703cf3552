#include "harden/harden.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "base/error.hpp"
#include "config/values.hpp"
#include "harden/internal.hpp"
#include "tls/certificate.hpp"
#include "tls/ticket_key.hpp"

namespace ngxtls::harden {

namespace fs = std::filesystem;
using model::version;

std::string to_string(tickets_mode m) {
  return m == tickets_mode::fleet ? "fleet" : "host";
}

std::string to_string(ocsp_mode m) {
  switch (m) {
    case ocsp_mode::on:
      return "on";
    case ocsp_mode::off:
      return "off";
    default:
      return "auto";
  }
}

std::int64_t cache_size_mb(std::int64_t sessions) {
  // nginx docs (ssl_session_cache): "one megabyte of the cache can store about 4000 sessions".
  constexpr std::int64_t per_mb = 4000;
  if (sessions <= 0) return 1;
  return std::max<std::int64_t>(1, (sessions + per_mb - 1) / per_mb);
}

namespace {

// nginx versions where directives and parameters appeared or changed (nginx CHANGES).
constexpr version http2_directive{1, 25, 1};   // `http2 on`; `listen ... http2` deprecated
constexpr version listen_http2{1, 9, 5};       // `listen ... http2`
constexpr version conf_command{1, 19, 4};      // ssl_conf_command
constexpr version tls13_nginx{1, 13, 0};       // TLSv1.3 in ssl_protocols
constexpr version tls13_openssl{1, 1, 1};      // TLS 1.3 in OpenSSL
constexpr version shm_ticket_keys{1, 23, 2};   // ticket keys kept in the shared cache zone
constexpr version always_add_header{1, 7, 5};  // add_header ... always

struct builder {
  snippet& s;
  void http(std::string directive, std::string reason) {
    s.lines.push_back({"http", std::move(directive), std::move(reason)});
  }
  void server(std::string directive, std::string reason) {
    s.lines.push_back({"server", std::move(directive), std::move(reason)});
  }
};

std::string absolute_dir(const std::string& dir) {
  std::error_code ec;
  auto p = fs::absolute(dir, ec);
  if (ec) return dir;
  std::string out = p.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// Facts about one key file for the notes: never its bytes or key name.
void inspect_key(snippet& s, const std::string& path, bool& missing) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    missing = true;
    return;
  }
  try {
    auto k = tls::inspect_ticket_key_file(path);
    if (!k.valid_size)
      s.warnings.push_back(
          path + " is " + std::to_string(k.size_bytes) +
          " bytes: nginx accepts only 48 or 80 (`nginx -t`: must be 48 or 80 bytes); "
          "make it with `openssl rand 80`");
    if (k.group_or_other_readable)
      s.warnings.push_back(path +
                           " is readable by group or others: it protects every session's master "
                           "secret; chmod 0600 it");
  } catch (const tls::file_error& e) {
    s.warnings.push_back(std::string("cannot inspect ") + e.what());
  }
}

std::vector<rotation_step> rotation_procedure(const std::string& dir, const profile& p,
                                              bool keys_missing) {
  // Shell words: the directory may hold spaces, quotes or `;`.
  const std::string cur = shell_quote(dir + "/current.key"),
                    prev = shell_quote(dir + "/previous.key"),
                    prev_tmp = shell_quote(dir + "/previous.key.tmp"),
                    rotate_tmp = shell_quote(dir + "/rotate.tmp");
  const std::string life = "ssl_session_timeout " + p.session_timeout;
  std::vector<rotation_step> steps;
  if (keys_missing)
    steps.push_back(
        {"0. first deployment only: make both key files once, copy the same files to every host",
         {"umask 077", "openssl rand 80 > " + cur, "openssl rand 80 > " + prev,
          "# copy both files unchanged to " + dir + " on every host (mode 0600), then on each:",
          "nginx -t && nginx -s reload"},
         "every host must seal and open tickets with the same bytes; previous.key only decrypts, "
         "so a random one is harmless"});
  steps.push_back(
      {"1. make the new key (one machine, at least one ticket lifetime after the last promotion)",
       {"umask 077", "openssl rand 80 > next.key"},
       "80 bytes: a 16-byte key name, then HMAC and AES-256 keys "
       "(docs/nginx-facts.md#ticket-key-rotation); umask 077 keeps "
       "it 0600 from the start"});
  steps.push_back(
      {"2. deploy it decrypt-only everywhere: [CURRENT, NEW]",
       {"install -m 0600 next.key " + prev_tmp + " && mv " + prev_tmp + " " + prev,
        "nginx -t && nginx -s reload"},
       "only the first key encrypts (docs/nginx-facts.md#ticket-key-rotation): every host can open "
       "tickets sealed with the "
       "new "
       "key before any host seals one; previous.key held the key retired at the last promotion, "
       "whose tickets expired one ticket lifetime (" +
           life + ") after that"});
  steps.push_back({"3. check that every host has it",
                   {"sha256sum " + prev + "   # same digest on every host (a digest, not the key)"},
                   "promote only when no host is left that cannot open the new key's tickets"});
  steps.push_back(
      {"4. promote it everywhere: [NEW, CURRENT]",
       {"mv " + cur + " " + rotate_tmp + " && mv " + prev + " " + cur + " && mv " + rotate_tmp +
            " " + prev,
        "nginx -t && nginx -s reload", "shred -u next.key   # on the machine that made it"},
       "hosts not yet promoted still open the new key's tickets and promoted ones the old key's: "
       "no ticket fails while hosts are on different steps; a ticket opened with the second key "
       "is renewed (docs/nginx-facts.md#ticket-key-rotation)"});
  steps.push_back(
      {"5. drop the old key one ticket lifetime later: repeat from step 1 every day",
       {"# step 2 of the next rotation overwrites previous.key: run it no sooner than " +
        p.session_timeout + " and no later than a day after step 4"},
       "a key then seals tickets for at most a day and opens them one lifetime more: a stolen key "
       "exposes only those sessions (forward secrecy); rotating faster than one ticket lifetime "
       "would drop a key whose tickets are still valid"});
  return steps;
}

}  // namespace

std::string nginx_quote(const std::string& value) {
  return config::token_for_reading(value);
}

std::string shell_quote(const std::string& value) {
  bool plain = !value.empty();
  for (char c : value)
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("_./:@%+=,-").find(c) == std::string_view::npos)
      plain = false;
  if (plain) return value;
  std::string out = "'";
  for (char c : value) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// Paths land in directives, shell commands and `# ` comment lines: a control character would
// end a comment line and start a directive (or a command).
void check_path(const std::string& flag, const std::string& path, bool variables) {
  for (char c : path)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw usage_error(flag +
                        ": the path holds a control character, which no nginx directive or "
                        "comment line in the snippet can carry");
  if (variables && path.find('$') != std::string::npos)
    throw usage_error(flag + " " + path +
                      ": nginx reads `$` in this directive as a variable "
                      "(`[emerg] unknown variable`), and has no escape for it: rename the file");
}

std::vector<std::string> target_protocols(const harden_options& o, const profile& p) {
  const bool tls13_ok = o.nginx >= tls13_nginx && o.openssl >= tls13_openssl;
  std::vector<std::string> protocols;
  for (const auto& proto : p.protocols)
    if (proto != "TLSv1.3" || tls13_ok) protocols.push_back(proto);
  return protocols;
}

namespace {

// The paths and the resolver the snippet will hold. The resolver is written as it is (addresses
// and parameters such as valid=30s): nothing in it may end the directive or start a comment.
void check_inputs(const harden_options& o) {
  check_path("--cert", o.cert_file, true);
  check_path("--key", o.key_file, true);
  check_path("--trusted-cert", o.trusted_certificate, false);
  check_path("--ticket-key-dir", o.ticket_key_dir, false);
  check_path("--upstream-ca", o.upstream_trusted_certificate, false);
  for (char c : o.resolver)
    if (static_cast<unsigned char>(c) < 0x20 ||
        std::string_view(";{}\"'\\#$").find(c) != std::string_view::npos)
      throw usage_error("--resolver " + o.resolver +
                        ": addresses and parameters only (no ; { } quotes \\ # $)");
}

// The snippet's header: profile, target versions, ticket and OCSP modes.
snippet start_snippet(const harden_options& o, const profile& p) {
  snippet s;
  s.profile_name = p.name;
  s.guideline = p.guideline;
  s.guideline_url = p.guideline_url;
  s.nginx = o.nginx;
  s.openssl = o.openssl;
  s.versions_source = o.versions_source;
  s.tickets =
      o.tickets.value_or(o.ticket_key_dir.empty() ? tickets_mode::host : tickets_mode::fleet);
  s.ocsp = o.ocsp;
  s.differences = p.differences;
  return s;
}

// Protocols, groups and ciphers of the profile, within what the target can speak.
void add_protocols_and_ciphers(builder& b, const harden_options& o, const profile& p) {
  snippet& s = b.s;
  const std::vector<std::string> protocols = target_protocols(o, p);
  if (protocols.empty())
    throw usage_error("profile " + p.name +
                      " needs TLS 1.3: nginx >= 1.13.0 with OpenSSL >= 1.1.1 (target: nginx " +
                      o.nginx.str() + ", OpenSSL " + o.openssl.str() + ")");
  if (protocols.size() != p.protocols.size())
    s.warnings.push_back(
        "TLSv1.3 left out: it needs nginx >= 1.13.0 and OpenSSL >= 1.1.1 (target: nginx " +
        o.nginx.str() + ", OpenSSL " + o.openssl.str() + ")");
  const bool serves_tls12 =
      std::find(protocols.begin(), protocols.end(), "TLSv1.2") != protocols.end();
  const bool serves_tls13 =
      std::find(protocols.begin(), protocols.end(), "TLSv1.3") != protocols.end();

  b.http("ssl_protocols " + join(protocols, " ") + ";",
         p.name + ": " + join(protocols, " and ") +
             " only; nginx's default varies by version (docs/nginx-facts.md#builtin-defaults)");

  std::vector<std::string> curves, skipped;
  for (const auto& c : p.curves) (o.openssl >= c.min_openssl ? curves : skipped).push_back(c.name);
  if (!curves.empty()) {
    std::string why = "groups of " + p.guideline;
    if (!skipped.empty())
      why += "; without " + join(skipped, ", ") + " (needs a newer OpenSSL)";
    else if (curves.front() == "X25519MLKEM768")
      why += "; hybrid post-quantum first (OpenSSL >= 3.5)";
    b.http("ssl_ecdh_curve " + join(curves, ":") + ";", why);
  }
  for (const auto& c : p.curves)
    if (o.openssl < c.min_openssl)
      s.notes.push_back(c.name + " left out of ssl_ecdh_curve: OpenSSL " + o.openssl.str() + " < " +
                        c.min_openssl.str() + " does not have it");

  if (serves_tls12 && !p.ciphers.empty())
    b.http("ssl_ciphers " + join(p.ciphers, ":") + ";",
           "TLS 1.2: ECDHE + AEAD only (" + p.guideline + ")");
  if (serves_tls13 && !p.ciphersuites.empty()) {
    if (o.nginx >= conf_command)
      b.http("ssl_conf_command Ciphersuites " + join(p.ciphersuites, ":") + ";",
             "pins the profile's TLS 1.3 suites (nginx >= 1.19.4)");
    else
      s.notes.push_back(
          "TLS 1.3 suites not pinned: ssl_conf_command needs nginx >= 1.19.4; OpenSSL's default "
          "suites are the profile's (" +
          join(p.ciphersuites, ", ") + ")");
  }
  b.http(std::string("ssl_prefer_server_ciphers ") + (p.prefer_server_ciphers ? "on" : "off") + ";",
         p.prefer_server_ciphers ? "server order decides"
                                 : "all listed ciphers are strong: the client picks");
}

// Resumption (docs/nginx-facts.md, facts 1 to 5): tickets stay on, a shared cache for session
// IDs.
void add_session_cache(builder& b, const harden_options& o, const profile& p) {
  snippet& s = b.s;
  const std::int64_t sessions = o.expected_sessions.value_or(p.expected_sessions);
  s.session_cache_mb = cache_size_mb(sessions);
  b.http("ssl_session_cache shared:" + std::string(session_zone) + ":" +
             std::to_string(s.session_cache_mb) + "m;",
         "shared by all workers (docs/nginx-facts.md#session-id-cache); ~4,000 sessions per MB: " +
             std::to_string(s.session_cache_mb * 4000) +
             (s.tickets == tickets_mode::fleet ? "; per host, for clients without tickets" : ""));
  b.http("ssl_session_timeout " + p.session_timeout + ";",
         "session and ticket lifetime; a retired ticket key must decrypt this long");
  b.http("ssl_session_tickets on;",
         "never off: that does not stop TLS 1.3 tickets, it ties them to one host's cache ("
         "docs/nginx-facts.md#tickets-off-tls13)");
}

// Where ticket keys come from: key files shared by the fleet, or nginx's own per host.
void add_ticket_keys(builder& b, const harden_options& o, const profile& p) {
  snippet& s = b.s;
  if (s.tickets == tickets_mode::host && !o.ticket_key_dir.empty())
    s.notes.push_back("--tickets host: --ticket-key-dir " + o.ticket_key_dir + " is not used");
  if (s.tickets == tickets_mode::fleet) {
    s.ticket_key_dir = absolute_dir(o.ticket_key_dir);
    const std::string cur = s.ticket_key_dir + "/current.key",
                      prev = s.ticket_key_dir + "/previous.key";
    bool missing = false;
    inspect_key(s, cur, missing);
    inspect_key(s, prev, missing);
    b.http("ssl_session_ticket_key " + nginx_quote(cur) + ";",
           "first key encrypts; the same file on every host "
           "(docs/nginx-facts.md#ticket-keys-per-instance, #ticket-key-rotation)");
    b.http("ssl_session_ticket_key " + nginx_quote(prev) + ";",
           "decrypts only: the retired key, or the next one during a rotation");
    if (missing)
      s.warnings.push_back("the key files do not exist yet in " + s.ticket_key_dir +
                           ": make them with step 0 of the rotation procedure before `nginx -t`");
    s.notes.push_back(
        "ticket keys live in the http block, so the default server of every socket uses them: on "
        "one socket the default server's keys seal every ticket "
        "(docs/nginx-facts.md#default-server-rules)");
    s.rotation = rotation_procedure(s.ticket_key_dir, p, missing);
  } else if (o.nginx >= shm_ticket_keys) {
    s.warnings.push_back(
        "--tickets host: nginx " + o.nginx.str() +
        " keeps its own ticket keys in the shared cache zone (rotated, surviving reloads), but "
        "they never leave this host: behind a load balancer with N hosts expect about 1/N TLS 1.3 "
        "and ticket resumption (docs/nginx-facts.md#ticket-keys-per-instance); use --tickets fleet "
        "--ticket-key-dir DIR there");
  } else {
    s.warnings.push_back(
        "--tickets host on nginx " + o.nginx.str() +
        " < 1.23.2: ticket keys are made at each configuration load, so every reload or restart "
        "drops every outstanding ticket (docs/nginx-facts.md#ticket-keys-per-instance; sessions in "
        "the shared cache survive); for "
        "tickets that survive reloads, use --tickets fleet with a key file even on one host");
  }
}

// The server block: listen sockets, HTTP/2, certificate and key, HSTS.
void add_server_block(builder& b, const harden_options& o, const profile& p) {
  const bool http2_on = o.nginx >= http2_directive;
  for (const auto& addr : o.listen) {
    std::string l = "listen " + addr + " ssl";
    if (!http2_on && o.nginx >= listen_http2) l += " http2";
    if (!o.listen_flags.empty()) l += " " + o.listen_flags;
    b.server(l + ";", http2_on ? "TLS"
                               : (o.nginx >= listen_http2
                                      ? "TLS, HTTP/2 (a listen parameter before nginx 1.25.1)"
                                      : "TLS (HTTP/2 needs nginx >= 1.9.5)"));
  }
  if (http2_on) b.server("http2 on;", "HTTP/2 (nginx >= 1.25.1 deprecates `listen ... http2`)");
  b.server(
      "ssl_certificate " +
          nginx_quote(o.cert_file.empty() ? std::string("/path/to/fullchain.pem") : o.cert_file) +
          ";",
      "leaf first, then the intermediates");
  b.server("ssl_certificate_key " +
               nginx_quote(o.key_file.empty() ? std::string("/path/to/privkey.pem") : o.key_file) +
               ";",
           "mode 0600");
  b.server("add_header Strict-Transport-Security \"max-age=" + std::to_string(p.hsts_max_age_s) +
               "\"" + (o.nginx >= always_add_header ? " always" : "") + ";",
           "HSTS, two years; a location with its own add_header drops it");
}

// Automatic stapling: on when the certificate names a responder, with a warning when nginx
// would not find its issuer (nginx looks in the chain and in ssl_trusted_certificate,
// docs/nginx-facts.md#ocsp-stapling-quiet); nullopt, with a note, when it names none.
std::optional<std::string> stapling_from_certificate(snippet& s, const harden_options& o) {
  std::vector<tls::certificate_info> chain;
  try {
    chain = tls::read_certificate_chain(o.cert_file);
  } catch (const tls::file_error& e) {
    throw input_error({o.cert_file, 0, 0}, std::string("--cert: ") + e.reason());
  }
  if (chain.front().ocsp_urls.empty()) {
    s.notes.push_back("OCSP stapling left out: " + o.cert_file +
                      " names no OCSP responder, so nginx would ignore ssl_stapling with a "
                      "[warn] (docs/nginx-facts.md#ocsp-stapling-quiet)");
    return std::nullopt;
  }
  std::vector<std::string> ca;
  if (!o.trusted_certificate.empty()) ca.push_back(o.trusted_certificate);
  bool issuer = false;
  try {
    issuer = tls::issuer_available(o.cert_file, ca);
  } catch (const tls::file_error&) {
  }
  if (!issuer)
    s.warnings.push_back(
        "the issuer of " + o.cert_file + " is in neither it nor " +
        (o.trusted_certificate.empty() ? std::string("--trusted-cert") : o.trusted_certificate) +
        ": nginx would ignore ssl_stapling (`issuer certificate not found`, "
        "docs/nginx-facts.md#ocsp-stapling-quiet); "
        "append the intermediate to the certificate file or give --trusted-cert");
  return "the certificate names OCSP responder " + chain.front().ocsp_urls.front();
}

// Whether to staple and why: forced, or automatic as stapling_from_certificate decides; nullopt
// leaves stapling out (with a note saying why, for automatic).
std::optional<std::string> stapling_reason(snippet& s, const harden_options& o) {
  if (o.ocsp == ocsp_mode::on)
    return "forced (--ocsp on): needs an OCSP URL in the certificate, its issuer in "
           "ssl_certificate or ssl_trusted_certificate, and a resolver for the responder; else "
           "nginx ignores it with a [warn]";
  if (o.ocsp != ocsp_mode::automatic) return std::nullopt;
  if (o.cert_file.empty()) {
    s.notes.push_back(
        "OCSP stapling left out: give --cert FILE to check for an OCSP responder URL (Let's "
        "Encrypt certificates have none since 2025-05), or --ocsp on");
    return std::nullopt;
  }
  return stapling_from_certificate(s, o);
}

// OCSP stapling (docs/nginx-facts.md#ocsp-stapling-quiet).
void add_ocsp_stapling(builder& b, const harden_options& o, const profile& p) {
  snippet& s = b.s;
  const std::optional<std::string> ocsp_reason = stapling_reason(s, o);
  if (!ocsp_reason) return;
  if (!p.ocsp_staple) s.notes.push_back("the profile does not ask for OCSP stapling");
  s.stapling = true;
  b.server("ssl_stapling on;", *ocsp_reason);
  b.server("ssl_stapling_verify on;", "staple only responses that verify");
  b.server("ssl_trusted_certificate " +
               nginx_quote(o.trusted_certificate.empty()
                               ? std::string("/path/to/root_and_intermediates.pem")
                               : o.trusted_certificate) +
               ";",
           "issuer and root: to find the issuer and verify responses "
           "(docs/nginx-facts.md#ocsp-stapling-quiet)");
  b.server("resolver " + o.resolver + ";",
           "resolves the responder at run time (docs/nginx-facts.md#ocsp-stapling-quiet)");
}

}  // namespace

snippet generate(const harden_options& o) {
  check_inputs(o);
  const profile p = load_profile(o.profile);
  snippet s = start_snippet(o, p);
  if (s.tickets == tickets_mode::fleet && o.ticket_key_dir.empty())
    throw usage_error(
        "--tickets fleet needs --ticket-key-dir DIR (where current.key and previous.key live)");
  if (o.listen.empty()) throw usage_error("harden: at least one listen address is needed");
  builder b{s};
  add_protocols_and_ciphers(b, o, p);
  add_session_cache(b, o, p);
  add_ticket_keys(b, o, p);
  b.http("",
         "ssl_early_data stays off (default): nginx has no 0-RTT anti-replay "
         "(docs/nginx-facts.md#early-data-replay)");
  add_server_block(b, o, p);
  add_ocsp_stapling(b, o, p);
  add_tls_backends(s, o, p);
  return s;
}

}  // namespace ngxtls::harden
