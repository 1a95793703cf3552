// weak-key: a certificate key that is too small (RSA < 2048, DSA) or on an EC curve that
// browsers do not support (anything but P-256 and P-384).

#include "rules/upstream_tls.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "weak-key";

constexpr const char* doc = R"(# weak-key

## What it flags
The leaf certificate of an `ssl_certificate` file (or of a `proxy_ssl_certificate`,
`grpc_ssl_certificate` or `uwsgi_ssl_certificate` file, the client certificate nginx presents
to a TLS upstream) whose public key is
- RSA under 2048 bits, or DSA: error;
- EC on a curve other than P-256 (prime256v1) or P-384 (secp384r1), e.g. P-521 or a
  Brainpool curve: warning.
Ed25519 and Ed448 leaves are not flagged here (few public CAs issue them; clients that lack
them fail the handshake, which the prober shows).

## Why it matters
RSA keys under 2048 bits are below every current baseline (NIST SP 800-131A, CA/Browser
Forum) and OpenSSL 3 at its default security level 1 still loads 1024-bit keys, so nothing
stops it at start. Chrome removed P-521 from its supported groups and certificates, so a P-521
ECDSA certificate fails in Chrome; public CAs issue only P-256 and P-384.

## Example
```nginx
ssl_certificate /etc/nginx/tls/legacy-1024.pem;
```

## Fix
Issue a new key and certificate: `openssl req -newkey rsa:2048` or, better,
`-newkey ec -pkeyopt ec_paramgen_curve:P-256`.

## How the prober confirms it
`ngxtls probe HOST` reports the served key type and size.

## Source
NIST SP 800-131A rev. 2 (RSA below 2048 bits disallowed); CA/Browser Forum Baseline
Requirements 6.1.5 (RSA >= 2048, ECDSA P-256/P-384/P-521) and Chrome's supported curves
(P-256, P-384); OpenSSL SSL_CTX_set_security_level (level 1 allows 1024-bit RSA).
)";

/// The problem with `leaf`'s key and its severity, or nullopt when it is fine.
std::optional<std::pair<engine::severity, std::string>> key_problem(
    const tls::certificate_info& leaf) {
  if (leaf.key_type == "RSA" && leaf.key_bits < 2048)
    return std::pair{engine::severity::error,
                     "an RSA key of " + std::to_string(leaf.key_bits) + " bits (below 2048)"};
  if (leaf.key_type == "DSA")
    return std::pair{engine::severity::error,
                     std::string("a DSA key (no current client accepts DSA certificates)")};
  if (leaf.key_type == "EC" && leaf.curve != "prime256v1" && leaf.curve != "secp384r1")
    return std::pair{engine::severity::warning,
                     "an EC key on " +
                         (leaf.curve.empty() ? std::string("an unnamed curve") : leaf.curve) +
                         " (browsers support P-256 and P-384 only)"};
  return std::nullopt;
}

/// The finding for certificate `c`, or nothing when its key is fine.
void check_certificate(const engine::context& ctx, const certificate_ref& c,
                       const std::string& server, engine::finding_list& out) {
  if (!c.chain) return;
  const auto& leaf = c.chain->front();
  const auto problem = key_problem(leaf);
  if (!problem) return;
  auto f = ctx.make(id, problem->first, "certificate \"" + c.path + "\" has " + problem->second,
                    c.cert->where);
  f.facts.push_back({"key",
                     leaf.key_type + " " + std::to_string(leaf.key_bits) +
                         (leaf.curve.empty() ? "" : " " + leaf.curve),
                     "certificate", std::nullopt});
  f.facts.push_back({"subject", leaf.subject, "certificate", std::nullopt});
  f.fix =
      "# new key and certificate:\nopenssl req -new -newkey ec -pkeyopt "
      "ec_paramgen_curve:P-256 -nodes ...";
  f.server = server;
  out.push_back(std::move(f));
}

void check(const engine::context& ctx, engine::finding_list& out) {
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl) continue;
    for (const auto& c : certificates_of(ctx, s))
      check_certificate(ctx, c, server_label(ctx, s), out);
  }
  // The client certificates nginx presents to its TLS upstreams.
  for (const auto& c : upstream_certificates(ctx)) check_certificate(ctx, c.ref, c.place, out);
}

}  // namespace

engine::rule weak_key() {
  return {id, engine::severity::error,
          "Certificate key under 2048-bit RSA, DSA, or on an unsupported EC curve", doc, check};
}

}  // namespace ngxtls::rules
