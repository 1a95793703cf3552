// cross-server-resumption: servers on one socket that differ in client-certificate checks
// while sessions cross between them (CVE-2025-23419).

#include <set>

#include "rules/common.hpp"
#include "rules/rules.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "cross-server-resumption";

constexpr const char* doc = R"(# cross-server-resumption

## What it flags
Two servers on one TLS listen socket that differ in client-certificate verification
(`ssl_verify_client`, `ssl_client_certificate`, `ssl_trusted_certificate`), while the socket
can resume sessions at all (its default server has tickets on or a session cache). Error on
nginx before 1.27.4 (and 1.26.x before 1.26.3); a note on fixed versions.

## Why it matters
Sessions cross virtual servers: the default server's ticket keys and cache serve every name
on the socket, so a ticket obtained with SNI `a` resumes with SNI `b`. When `b` requires a
client certificate and `a` does not, a client resumes into `b` with a session that never
passed `b`'s check: CVE-2025-23419. nginx 1.27.4 and 1.26.3 refuse such resumptions; even
there the servers still share one session space (a cross-tenant session between names with
equal checks), which is worth knowing before mixing tenants on a socket.

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
Upgrade nginx to 1.27.4 / 1.26.3 or later, and give servers with client verification their
own listen socket (address or port), or their own ticket keys and cache in a server that is
the default of that socket:
```nginx
server { listen 8443 ssl default_server; server_name admin.example.com; ssl_verify_client on; ... }
```

## How the prober confirms it
`ngxtls probe --sni www.example.com --sess-out s.pem` then
`ngxtls probe --sni admin.example.com --sess-in s.pem`: on an affected version the second
resumes without a client certificate.

## Source
DESIGN fact 6 (nginx 1.22.1: a ticket obtained with SNI a resumes with SNI b, 10/10, even with
different certificates); nginx security advisory CVE-2025-23419 (fixed in 1.27.4 and 1.26.3,
nginx CHANGES).
)";

bool fixed_version(const model::version& v) {
  if (v >= model::version{1, 27, 4}) return true;
  return v.major == 1 && v.minor == 26 && v.patch >= 3;
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

bool verifies(const model::server& s) {
  const auto* v = s.get("ssl_verify_client");
  return v && v->first() != "off";
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  const bool fixed = fixed_version(m.versions.nginx);
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
    if (verify_signature(s) == verify_signature(d)) continue;
    // Point at the server that verifies clients: that is the one a crossing session bypasses.
    const model::server& victim = verifies(s) ? s : d;
    if (!seen.insert(p.name_based).second) continue;
    const model::server& other = &victim == &s ? d : s;
    auto f =
        ctx.make(id, fixed ? engine::severity::note : engine::severity::error,
                 fixed ? server_label(ctx, victim) + " and " + server_label(ctx, other) + " on " +
                             p.socket->name() +
                             " share one session space but differ in client-certificate checks; "
                             "nginx " +
                             m.versions.nginx.str() +
                             " refuses resumption across them (CVE-2025-23419 fix), a separate "
                             "socket keeps tenants apart"
                       : "a session from " + server_label(ctx, other) + " resumes in " +
                             server_label(ctx, victim) + " on " + p.socket->name() +
                             " without its client-certificate check (CVE-2025-23419, fixed in "
                             "nginx 1.27.4 / 1.26.3; assumed " +
                             m.versions.nginx.str() + ")",
                 anchor_of(victim, "ssl_verify_client"));
    for (const char* n : {"ssl_verify_client", "ssl_client_certificate"}) {
      f.facts.push_back(setting_evidence(ctx, s, n));
      f.facts.push_back(setting_evidence(ctx, d, n));
      f.facts.back().name = std::string("default server ") + n;
    }
    f.facts.push_back(setting_evidence(ctx, d, "ssl_session_tickets"));
    f.facts.push_back(setting_evidence(ctx, d, "ssl_session_cache"));
    f.fix =
        "# upgrade to nginx >= 1.27.4 (1.26.3), and give the verifying server its own socket:\n"
        "listen 8443 ssl default_server;";
    f.server = server_label(ctx, victim);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule cross_server_resumption() {
  return {
      id, engine::severity::error,
      "Sessions cross between servers that differ in client-certificate checks (CVE-2025-23419)",
      doc, check};
}

}  // namespace ngxtls::rules
