// ecdh-curve-unknown: ssl_ecdh_curve names a group the OpenSSL does not know.

#include <set>
#include <unordered_map>

#include "rules/common.hpp"
#include "tls/ciphers.hpp"
#include "tls/params.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "ecdh-curve-unknown";

constexpr const char* doc = R"(# ecdh-curve-unknown

## What it flags
An `ssl_ecdh_curve` value (other than `auto`) that the linked libssl rejects as a curve list,
naming the groups it does not know, e.g. a typo (`prime256`), `X25519Kyber768` on an OpenSSL
without it, or a curve name from another library. Error. When the assumed OpenSSL differs from
the linked one, the message says so.

## Why it matters
nginx hands the list to SSL_CTX_set1_curves_list at start and fails the whole configuration
when OpenSSL rejects it: `[emerg] SSL_CTX_set1_curves_list("...") failed`.

## Example
```nginx
ssl_ecdh_curve X25519:prime256:secp384r1;
```

## Fix
```nginx
ssl_ecdh_curve X25519:prime256v1:secp384r1;   # or leave it at auto
```

## How the prober confirms it
It cannot: nginx does not start. The prober reports the negotiated group when it does.

## Source
nginx src/event/ngx_event_openssl.c, ngx_ssl_ecdh_curve (SSL_CTX_set1_curves_list, "auto" left
to OpenSSL); OpenSSL SSL_CTX_set1_groups_list(3).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  std::set<const config::directive*> seen;
  // One libssl verdict per distinct list: a context made per server was most of lint's time
  // on a config whose every site sets the same curves.
  std::unordered_map<std::string, std::optional<std::string>> verdicts;
  for (const auto& s : m.servers) {
    if (!s.has_ssl) continue;
    const auto* st = s.get("ssl_ecdh_curve");
    if (!st || !st->where() || st->first() == "auto" || !seen.insert(st->where()).second) continue;
    std::string list(st->first());
    auto known = verdicts.find(list);
    if (known == verdicts.end()) {
      auto verdict = tls::rejected_curves(list);
      known = verdicts.emplace(std::move(list), std::move(verdict)).first;
    }
    const std::optional<std::string>& bad = known->second;
    if (!bad) continue;
    // The linked libssl can only judge names for its own version: when the assumed OpenSSL is
    // newer (e.g. X25519MLKEM768 from 3.5), an unknown name here is not a verdict.
    const auto linked = model::version::parse(tls::openssl_version());
    const bool assumed_newer = linked && m.versions.openssl > *linked;
    auto f = ctx.make(
        id, assumed_newer ? engine::severity::note : engine::severity::error,
        assumed_newer
            ? "ssl_ecdh_curve names groups the OpenSSL " + tls::openssl_version() +
                  " linked here does not know (" + *bad + "); the assumed OpenSSL " +
                  m.versions.openssl.str() + " may: not checked here"
            : "ssl_ecdh_curve names groups OpenSSL " + tls::openssl_version() + " does not know (" +
                  *bad + "): nginx fails with SSL_CTX_set1_curves_list() failed" +
                  (openssl_differs(m) ? " (assumed OpenSSL " + m.versions.openssl.str() + ")" : ""),
        st->where());
    f.facts.push_back(setting_evidence(ctx, s, "ssl_ecdh_curve"));
    f.fix = "ssl_ecdh_curve X25519:prime256v1:secp384r1;";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule ecdh_curve_unknown() {
  engine::rule r{id, engine::severity::error, "ssl_ecdh_curve names a group OpenSSL does not know",
                 doc, check};
  r.confirmed_by = engine::probe_question::nginx_t_verdict;
  return r;
}

}  // namespace ngxtls::rules
