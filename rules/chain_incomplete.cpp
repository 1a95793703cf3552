// chain-incomplete: an ssl_certificate file whose chain is out of order or lacks the
// intermediate certificate.

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "chain-incomplete";

constexpr const char* doc = R"(# chain-incomplete

## What it flags
An `ssl_certificate` file
- that holds a leaf alone, not self-signed, so no intermediate is sent (warning);
- whose certificates are out of order: a certificate is not followed by its issuer (warning).
A self-signed leaf alone is not flagged (a private or test setup, nothing to complete).

## Why it matters
nginx sends the file as it is: the leaf, then the rest in file order. Browsers often repair a
missing intermediate from a cache or by fetching it (AIA), which hides the problem on the
desktop, while curl, mobile apps, Java, Go and Python clients fail with "unable to get local
issuer certificate". A misordered chain is rejected by strict clients and by OCSP stapling,
which needs the issuer right after the leaf.

## Example
```nginx
ssl_certificate /etc/letsencrypt/live/example.com/cert.pem;   # leaf only: use fullchain.pem
```

## Fix
Use the full chain, leaf first, each certificate followed by its issuer:
```nginx
ssl_certificate /etc/letsencrypt/live/example.com/fullchain.pem;
```

## How the prober confirms it
`openssl s_client -connect HOST:443 -showcerts` lists what the server sends; the prober
reports the served certificate's issuer.

## Source
RFC 8446 section 4.4.2 and RFC 5246 section 7.4.2 (each following certificate certifies the
one before it); nginx ngx_ssl_certificate (the first certificate is the leaf, the rest go to
the chain in file order).
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl) continue;
    for (const auto& c : certificates_of(ctx, s)) {
      const auto* chain = c.chain;
      if (!chain) continue;
      const auto& leaf = chain->front();
      std::string problem;
      if (chain->size() == 1) {
        if (leaf.self_signed) continue;
        problem = "holds only the leaf (issuer " + leaf.issuer +
                  "): no intermediate is sent, so clients without it cached fail to verify, unless "
                  "that issuer is itself a trusted root";
      } else {
        for (std::size_t i = 0; i + 1 < chain->size(); ++i) {
          if ((*chain)[i].issuer == (*chain)[i + 1].subject) continue;
          if ((*chain)[i].self_signed) continue;  // a root in the file: harmless extra
          problem = "is out of order: certificate " + std::to_string(i + 1) + " (" +
                    (*chain)[i].subject + ") is followed by " + (*chain)[i + 1].subject +
                    ", not by its issuer " + (*chain)[i].issuer;
          break;
        }
        if (problem.empty()) continue;
      }
      auto f = ctx.make(id, engine::severity::warning,
                        "certificate file \"" + c.path + "\" " + problem, c.cert->where);
      f.facts.push_back(
          {"certificates in file", std::to_string(chain->size()), "file", std::nullopt});
      f.facts.push_back({"leaf issuer", leaf.issuer, "certificate", std::nullopt});
      f.fix =
          "ssl_certificate fullchain.pem;  # leaf, then its intermediate(s), each followed by its "
          "issuer";
      f.server = server_label(ctx, s);
      out.push_back(std::move(f));
    }
  }
}

}  // namespace

engine::rule chain_incomplete() {
  return {id, engine::severity::warning,
          "Certificate file lacks its intermediate or is out of order", doc, check};
}

}  // namespace ngxtls::rules
