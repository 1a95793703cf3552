// dhparam-weak: ssl_dhparam with a prime under 2048 bits.

#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "dhparam-weak";

constexpr const char* doc = R"(# dhparam-weak

## What it flags
An `ssl_dhparam` file whose Diffie-Hellman prime is under 2048 bits (read with libssl, as
nginx reads it). Warning; a file that holds no DH parameters is an error (nginx fails at
start: `PEM_read_bio_DHparams(...) failed`). Unreadable files are left to
`file-not-inspected`.

## Why it matters
DHE key exchange with a 1024-bit group is within reach of a well-funded attacker
(Logjam, 2015), and a widely shared 1024-bit prime is a single precomputation target.
OpenSSL 3 at security level 2 rejects such groups and clients such as Chrome have dropped DHE
altogether, so small groups buy no compatibility.

## Example
```nginx
ssl_dhparam /etc/nginx/dhparam-1024.pem;
```

## Fix
Use the RFC 7919 ffdhe2048 group (Mozilla's recommendation), or drop DHE suites and
`ssl_dhparam` entirely:
```nginx
ssl_dhparam /etc/nginx/ffdhe2048.pem;   # curl https://ssl-config.mozilla.org/ffdhe2048.txt
```

## How the prober confirms it
`openssl s_client -cipher DHE -connect HOST:443` prints "Server Temp Key: DH, 1024 bits".

## Source
Logjam (Adrian et al., "Imperfect Forward Secrecy", CCS 2015); RFC 7919; nginx
ngx_ssl_dhparam (src/event/ngx_event_openssl.c) reads the file with PEM_read_bio_DHparams
(PEM_read_bio_Parameters on OpenSSL 3).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  std::set<const config::directive*> seen;
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl) continue;
    const auto* st = s.get("ssl_dhparam");
    if (!st || st->first().empty() || dynamic_path(st->first()) || !seen.insert(st->where()).second)
      continue;
    const std::string path = ctx.resolve(st->first());
    const auto& l = ctx.files().dhparam(path);
    if (!l.facts) {
      if (l.missing || l.error.find("no DH parameters") == std::string::npos) continue;
      auto f = ctx.make(id, engine::severity::error,
                        "ssl_dhparam \"" + path + "\" holds no DH parameters: nginx will not start",
                        st->where());
      f.facts.push_back(setting_evidence(ctx, s, "ssl_dhparam"));
      f.fix = "openssl genpkey -genparam -algorithm DH -pkeyopt group:ffdhe2048 -out dhparam.pem";
      f.server = server_label(ctx, s);
      out.push_back(std::move(f));
      continue;
    }
    if (*l.facts >= 2048) continue;
    auto f = ctx.make(id, engine::severity::warning,
                      "ssl_dhparam \"" + path + "\" is a " + std::to_string(*l.facts) +
                          "-bit DH group (below 2048): DHE key exchange with it is weak (Logjam)",
                      st->where());
    f.facts.push_back(setting_evidence(ctx, s, "ssl_dhparam"));
    f.facts.push_back({"DH prime bits", std::to_string(*l.facts), "file", std::nullopt});
    f.fix =
        "# RFC 7919 group:\nopenssl genpkey -genparam -algorithm DH -pkeyopt group:ffdhe2048 -out "
        "dhparam.pem";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule dhparam_weak() {
  return {id, engine::severity::warning, "ssl_dhparam group under 2048 bits", doc, check};
}

}  // namespace ngxtls::rules
