// legacy-protocols: SSLv2, SSLv3, TLS 1.0 or TLS 1.1 enabled, explicitly or by nginx's default.

#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "legacy-protocols";

constexpr const char* doc = R"(# legacy-protocols

## What it flags
A TLS server whose effective `ssl_protocols` enables SSLv2, SSLv3, TLSv1 or TLSv1.1, set in
the config or by nginx's default for the assumed version (before 1.23.4 the default is
`TLSv1 TLSv1.1 TLSv1.2`; 1.23.4 to 1.27.2 add TLSv1.3 and keep 1.0/1.1; from 1.27.3 it is
`TLSv1.2 TLSv1.3`).
- Warning, when the assumed OpenSSL would negotiate them: OpenSSL before 3.0, or a cipher
  string that lowers the security level (`@SECLEVEL=0`).
- Note, when the assumed OpenSSL refuses them anyway: OpenSSL 3.x at its default security
  level 1 refuses TLS 1.0/1.1 (they need SHA-1 signatures); SSLv3 and SSLv2 are not built into
  OpenSSL 1.1.0 and later (Debian, most distributions). The directive then only misleads.
- Error, when those are all it enables (no TLSv1.2, no TLSv1.3 the assumed OpenSSL speaks):
  `ssl_protocols SSLv2 SSLv3 TLSv1;` leaves no protocol, and every handshake fails
  (`nginx -t` accepts it; the error log says `no protocols available` at each connection).
A name-based server (not the default server of any ssl socket it listens on) is judged by
its default servers before nginx 1.29.2: those versions negotiate the protocol with the
default server's `ssl_protocols` and ignore the name-based server's own
(docs/nginx-facts.md#default-server-rules; `protocols-ignored-per-sni` says so).

## Why it matters
TLS 1.0 and 1.1 were deprecated by RFC 8996 (2021): they rely on SHA-1 and MD5 in the
handshake and lack AEAD ciphers; PCI DSS forbids them. SSLv3 is broken (POODLE). Browsers no
longer offer them, so enabling them only helps downgrade attacks and old scanners.

## Example
```nginx
ssl_protocols TLSv1 TLSv1.1 TLSv1.2 TLSv1.3;   # Debian 12's /etc/nginx/nginx.conf
```

## Fix
```nginx
ssl_protocols TLSv1.2 TLSv1.3;
```

## How the prober confirms it
`openssl s_client -tls1_1 -connect HOST:443` (or a prober extension) completes or fails the
handshake; with OpenSSL 3 on the server it fails with "no protocols available".

## Source
docs/nginx-facts.md#no-protocol-left (`ssl_protocols SSLv2 SSLv3 TLSv1`: every handshake fails on
nginx 1.22.1, 1.26.3 and 1.30.6, and `openssl s_server -tls1` refuses `s_client -tls1` at the
default security level; measured by tests/integration/test_nginx_versions.cpp);
docs/nginx-facts.md#builtin-defaults (nginx defaults per version; with OpenSSL 3 at its default security level
TLS 1.0/1.1 fail); RFC 8996; OpenSSL 3.0 man page SSL_CTX_set_security_level (level 1 and
above: no SHA-1 handshake signatures below TLS 1.2).
)";

bool seclevel_zero(const model::server& s) {
  const auto* c = s.get("ssl_ciphers");
  return c && c->first().find("@SECLEVEL=0") != std::string::npos;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  const bool openssl3 = m.versions.openssl >= model::version{3, 0, 0};
  const bool no_ssl3 = m.versions.openssl >= model::version{1, 1, 0};
  for (std::size_t i = 0; i < m.servers.size(); ++i) {
    const model::server& s = m.servers[i];
    if (!s.has_ssl) continue;
    // Judged where the protocols are negotiated: at the default server of each socket.
    if (protocols_from_default_servers(m, i)) continue;
    const auto* protocols = s.get("ssl_protocols");
    std::vector<std::string> old;
    for (const char* p : {"SSLv2", "SSLv3", "TLSv1", "TLSv1.1"})
      if (model::protocols_enable(protocols, p)) old.push_back(p);
    if (old.empty()) continue;
    std::string list;
    for (const auto& p : old) list += (list.empty() ? "" : " ") + p;
    const bool from_default = !protocols || protocols->from == model::origin::nginx_default;
    // Which of them the assumed OpenSSL would actually negotiate.
    bool live = false;
    for (const auto& p : old) {
      if (p == "SSLv2" || p == "SSLv3")
        live = live || !no_ssl3;
      else
        live = live || !openssl3 || seclevel_zero(s);
    }
    std::string message =
        (from_default ? "nginx " + m.versions.nginx.str() + "'s default ssl_protocols enables "
                      : "ssl_protocols enables ") +
        list;
    // Nothing else on, and OpenSSL refuses these: no protocol is left to negotiate.
    const bool outage =
        !live && !model::protocols_enable(protocols, "TLSv1.2") && !tls13_enabled(m, s);
    if (outage)
      message = (from_default ? "nginx " + m.versions.nginx.str() + "'s default ssl_protocols "
                              : std::string("ssl_protocols ")) +
                "enables only " + list + ", which OpenSSL " + m.versions.openssl.str() +
                " refuses (no SSLv3 build, security level 1 refuses TLS 1.0/1.1): no protocol "
                "is left, every TLS handshake fails";
    else if (live)
      message += ": deprecated protocols (RFC 8996) that OpenSSL " + m.versions.openssl.str() +
                 " will negotiate with old or downgraded clients";
    else
      message +=
          ", but OpenSSL " + m.versions.openssl.str() +
          " refuses them anyway (no SSLv3 build, security level 1): the setting only misleads";
    auto f = ctx.make(id,
                      outage ? engine::severity::error
                      : live ? engine::severity::warning
                             : engine::severity::note,
                      message, anchor_of(s, "ssl_protocols"));
    f.facts.push_back(setting_evidence(ctx, s, "ssl_protocols"));
    f.facts.push_back(
        {"assumed OpenSSL", m.versions.openssl.str(), m.versions.openssl_source, std::nullopt});
    f.fix = "ssl_protocols TLSv1.2 TLSv1.3;";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule legacy_protocols() {
  return {id, engine::severity::warning,
          "SSLv3, TLS 1.0 or TLS 1.1 enabled (explicitly or by default)", doc, check};
}

}  // namespace ngxtls::rules
