// cross-server-resumption: servers on one socket that differ in client-certificate checks
// while sessions cross between them (CVE-2025-23419).

#include <cctype>
#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "cross-server-resumption";

constexpr const char* doc = R"(# cross-server-resumption

## What it flags
Two servers on one TLS listen socket that differ in client-certificate verification
(`ssl_verify_client`, `ssl_client_certificate`, `ssl_trusted_certificate`), while the socket
can resume sessions at all (its default server has tickets on or a session cache). The
session's source is a server that completes handshakes: with a default server that has
`ssl_reject_handshake on`, another name-based server on the socket, or no finding:
- Error on versions without the CVE-2025-23419 fix (before 1.26.3, and 1.27.0 to 1.27.3),
  when TLS 1.3 is enabled; a warning with TLS 1.2 only. When the nginx on PATH comes from a
  Debian package, its package version decides: Debian 12 backported the fix in
  1.22.1-9+deb12u1. Otherwise the message says that the finding holds unless the
  distribution backported the fix.
- Warning on fixed versions before 1.29.2 with TLS 1.3: a TLS 1.3 client that offers a session
  from the other server fails the handshake (alert access denied), with a valid client
  certificate or without; a note with TLS 1.2 only (those sessions resume, and nginx answers
  421 Misdirected Request). The fix refuses a session for another name at any verifying
  server, so this warning also covers servers whose checks are equal.
- Nothing from nginx 1.29.2: sessions cross servers only when they share a certificate, and
  a session never resumes into a server whose client verification differs (a full
  handshake instead).

## Why it matters
Before 1.29.2 sessions cross virtual servers: the default server's ticket keys and cache
serve every name on the socket, so a ticket obtained with SNI `a` resumes with SNI `b`. When
`b` requires a client certificate and `a` does not, a client resumes into `b` with a session
that never passed `b`'s check: CVE-2025-23419. Only TLS 1.3 reaches `b`'s requests that way
(upstream 1.22.1 serves them with `$ssl_client_verify` SUCCESS); a TLS 1.2 session resumes
but nginx answers 421. The fix (1.26.3, 1.27.4, distribution backports) refuses such a
session in the SNI callback, before any client certificate is sent: the TLS 1.3 handshake
fails with access_denied for every client offering one, even a client holding a valid
certificate for `b`. Clients that reuse sessions across names (HTTP/2 connection
coalescing, shared session caches) then see failed handshakes.

## Example
```nginx
server { listen 443 ssl default_server; server_name www.example.com; }
server {
    listen 443 ssl;
    server_name admin.example.com;
    ssl_verify_client on;                    # bypassed by a session from www
    ssl_client_certificate /etc/nginx/clients-ca.pem;
}
```

## Fix
Upgrade nginx (1.29.2 or later resumes across servers only where it is safe), and give
servers with client verification their own listen socket (address or port), or their own
ticket keys and cache in a server that is the default of that socket:
```nginx
server { listen 8443 ssl default_server; server_name admin.example.com; ssl_verify_client on; ... }
```

## How the prober confirms it
`ngxtls probe --sni www.example.com --sess-out s.pem` then
`ngxtls probe --sni admin.example.com --sess-in s.pem` (or `openssl s_client -sess_in`): on
an affected version the second resumes without a client certificate; on a fixed one before
1.29.2 its TLS 1.3 handshakes fail with access denied.

## Source
Measured on Debian 12's 1.22.1 (package 1.22.1-9+deb12u11), upstream 1.26.3 and Debian sid's
1.30.6 (OpenSSL 3.6) by tests/integration/test_nginx_versions.cpp:
- "a ticket from SNI a offered at SNI b with different certificates": 20/20, 20/20, 0/20;
  "... with one certificate for both names": 20/20 on all three;
- "TLS 1.3 session from SNI a offered at SNI b that verifies client certificates" (with two
  certificates or one): alert access denied with and without a client certificate on 1.22.1
  and 1.26.3; a full handshake on 1.30.6 (HTTP 400 without a certificate, 200 with one);
- "TLS 1.2 session ...": resumed and 421 on 1.22.1 and 1.26.3; a full handshake on 1.30.6;
- "TLS 1.3 session from SNI a offered at SNI b when both verify client certificates alike",
  the client holding a valid certificate: access denied on 1.22.1 and 1.26.3; on 1.30.6 a full
  handshake with two certificates, resumed with one (HTTP 200).
nginx security advisory CVE-2025-23419 (fixed in 1.27.4 and 1.26.3, nginx CHANGES); Debian's
changelog: 1.22.1-9+deb12u1 "backport CVE-2025-23419 fix".
)";

bool upstream_fixed(const model::version& v) {
  if (v >= model::version{1, 27, 4}) return true;
  return v.major == 1 && v.minor == 26 && v.patch >= 3;
}

// Debian 12's package: "1.22.1-9+deb12uN", N >= 1, carries the backported fix.
bool package_fixed(const model::version& v, const std::string& package) {
  if (!(v == model::version{1, 22, 1})) return false;
  const std::string prefix = "1.22.1-9+deb12u";
  if (package.rfind(prefix, 0) != 0 || package.size() == prefix.size()) return false;
  std::size_t n = 0, i = prefix.size();
  for (; i < package.size() && std::isdigit(static_cast<unsigned char>(package[i])) && n < 100000;
       ++i)
    n = n * 10 + static_cast<std::size_t>(package[i] - '0');
  return i > prefix.size() && n >= 1;
}

std::string verify_signature(const model::server& s) {
  std::string sig;
  for (const char* n : {"ssl_verify_client", "ssl_client_certificate", "ssl_trusted_certificate"}) {
    sig += n;
    sig += '=';
    if (const auto* st = s.get(n))
      for (const auto a : st->args()) (sig += a) += ' ';
    sig += ';';
  }
  return sig;
}

bool rejects(const model::server& s) {
  return model::is_on(s.get("ssl_reject_handshake"));
}

bool verifies(const model::server& s) {
  const auto* v = s.get("ssl_verify_client");
  return v && v->first() != "off";
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  const auto& nv = m.versions.nginx;
  // From 1.29.2 nothing crosses into a server with other client checks (measured on 1.30.6).
  if (nv >= model::version{1, 29, 2}) return;
  const std::string& package = m.versions.nginx_package;
  const bool fixed = upstream_fixed(nv) || package_fixed(nv, package);
  std::set<std::size_t> seen;
  for (const auto& p : name_based_servers(m)) {
    const model::server& d = m.servers[p.default_server];
    const model::server& s = m.servers[p.name_based];
    const auto cache = model::cache_kind(d.get("ssl_session_cache"));
    const bool resumable = model::is_on(d.get("ssl_session_tickets")) ||
                           cache == model::session_cache_kind::shared ||
                           cache == model::session_cache_kind::builtin;
    if (!resumable) continue;
    if (!verifies(s) && !verifies(d)) continue;
    // Before 1.29.2 the default server's ssl_protocols rule the socket.
    const bool tls13 = tls13_enabled(m, d);
    // Equal checks: no bypass, but the fix refuses any session for another name at a verifying
    // server, so those TLS 1.3 handshakes fail too (measured on 1.22.1-9+deb12u11 and 1.26.3).
    auto crosses = [&](const model::server& from, const model::server& into) {
      return verify_signature(from) != verify_signature(into) || (fixed && tls13);
    };
    // Point at the server that verifies clients: that is the one a crossing session bypasses.
    const model::server& victim = verifies(s) ? s : d;
    // The session comes from a server that completes handshakes: never one with
    // `ssl_reject_handshake on`. With such a default server, another name on the socket is the
    // source, or there is none.
    const model::server* source = nullptr;
    if (&victim == &d) {
      if (!rejects(s) && !rejects(d) && crosses(s, d)) source = &s;
    } else {
      if (!rejects(d) && crosses(d, s)) source = &d;
      for (std::size_t i : p.socket->servers)
        if (!source && i != p.name_based && i != p.default_server && !rejects(m.servers[i]) &&
            crosses(m.servers[i], s))
          source = &m.servers[i];
    }
    if (!source || rejects(victim)) continue;
    if (!seen.insert(p.name_based).second) continue;
    const model::server& other = *source;
    const std::string a = server_label(ctx, other), b = server_label(ctx, victim);
    const std::string assumed =
        "nginx " + nv.str() + (package.empty() ? "" : " (Debian package " + package + ")");
    engine::severity sev;
    std::string msg;
    if (fixed) {
      sev = tls13 ? engine::severity::warning : engine::severity::note;
      msg =
          tls13
              ? "TLS 1.3 clients that offer a session from " + a + " to " + b + " on " +
                    p.socket->name() +
                    " fail the handshake (alert access denied), with a valid client certificate or "
                    "without: " +
                    assumed +
                    " refuses such sessions (CVE-2025-23419 fix) before any certificate is sent; "
                    "a separate socket for " +
                    b + " avoids it"
              : "TLS 1.2 sessions from " + a + " resume in " + b + " on " + p.socket->name() +
                    " and nginx answers 421 Misdirected Request (" + assumed +
                    ", CVE-2025-23419 fix); a separate socket for " + b + " avoids it";
    } else {
      sev = tls13 ? engine::severity::error : engine::severity::warning;
      const std::string unless =
          package.empty() ? "; this holds unless your distribution backported the fix"
                          : "; Debian package " + package +
                                " is not one known to carry the fix: check its changelog";
      msg = tls13
                ? "a TLS 1.3 session from " + a + " resumes in " + b + " on " + p.socket->name() +
                      " without its client-certificate check (CVE-2025-23419, fixed in nginx "
                      "1.27.4 / "
                      "1.26.3; assumed nginx " +
                      nv.str() + unless + ")"
                : "TLS 1.2 sessions from " + a + " resume in " + b + " on " + p.socket->name() +
                      " without its client-certificate check, and nginx answers 421 Misdirected "
                      "Request; enabling TLS 1.3 would let them through (CVE-2025-23419, fixed in "
                      "nginx 1.27.4 / 1.26.3; assumed nginx " +
                      nv.str() + unless + ")";
    }
    auto f = ctx.make(id, sev, msg, anchor_of(victim, "ssl_verify_client"));
    for (const char* n : {"ssl_verify_client", "ssl_client_certificate"}) {
      f.facts.push_back(setting_evidence(ctx, s, n));
      f.facts.push_back(setting_evidence(ctx, d, n));
      f.facts.back().name = std::string("default server ") + n;
    }
    if (source != &s && source != &d) {
      f.facts.push_back(setting_evidence(ctx, *source, "ssl_verify_client"));
      f.facts.back().name = "session source " + a + " ssl_verify_client";
    }
    f.facts.push_back(setting_evidence(ctx, d, "ssl_session_tickets"));
    f.facts.push_back(setting_evidence(ctx, d, "ssl_session_cache"));
    f.facts.push_back(setting_evidence(ctx, d, "ssl_protocols"));
    f.facts.push_back({"nginx version", nv.str(), m.versions.nginx_source, std::nullopt});
    if (!package.empty()) f.facts.push_back({"nginx package", package, "dpkg-query", std::nullopt});
    f.fix =
        "# upgrade to nginx >= 1.29.2, and give the verifying server its own socket:\n"
        "listen 8443 ssl default_server;";
    f.server = b;
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule cross_server_resumption() {
  engine::rule r{
      id, engine::severity::error,
      "Sessions cross between servers that differ in client-certificate checks (CVE-2025-23419)",
      doc, check};
  r.confirmed_by = engine::probe_question::session_crosses_names;
  r.costs_resumption = true;
  return r;
}

}  // namespace ngxtls::rules
