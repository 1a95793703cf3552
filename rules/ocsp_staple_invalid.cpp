// ocsp-staple-invalid: a staple the server sends that no client can use. Only `check` finds it
// (src/check/check.cpp, probe_findings): the config does not say what a responder will answer.

#include "engine/engine.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "ocsp-staple-invalid";

constexpr const char* doc = R"(# ocsp-staple-invalid

## What it flags
Found only by `ngxtls check` (never by `lint`): the server staples an OCSP response, but it is
not valid for the certificate it came with. A staple is valid only when it
- parses as a successful BasicOCSPResponse (not garbage, not `tryLater`/`internalError`/...);
- holds a SingleResponse for this certificate: its CertID names the certificate's serial and
  issuer (issuer name and key hash);
- is signed by the issuer, or by a responder certificate the issuer issued with the OCSP signing
  extended key usage (the served chain must hold the issuer to check this);
- says `good` (not `revoked`, not `unknown`);
- and is within thisUpdate/nextUpdate, with 5 minutes of clock skew.
The finding names what is wrong (the responseStatus, the revocation time and reason, the other
serial, the expiry) and points at the server's `ssl_stapling_file`, else its `ssl_stapling`,
else its `ssl_certificate`. Error: the server hands clients a staple they must reject.

## Why it matters
A revoked staple makes browsers that honour it refuse the site; an expired, foreign or
unverifiable staple is thrown away, so OCSP Must-Staple certificates fail and every other client
falls back to asking the responder itself. nginx serves an `ssl_stapling_file` as it is, without
looking at its status, signature or dates: an old file goes on being stapled after it expires.
Monitoring that only asks "is there a staple?" reports such a server as healthy.

## Example
```nginx
ssl_certificate     fullchain.pem;
ssl_stapling        on;
ssl_stapling_file   /etc/nginx/ocsp/example.der;  # fetched once, nextUpdate long past
```

## Fix
Refresh the response before its nextUpdate (a cron job with `openssl ocsp -respout`), or drop
`ssl_stapling_file` and let nginx fetch staples from the responder (`ssl_stapling on`, a
`resolver`, the issuer in `ssl_certificate` or `ssl_trusted_certificate`). Serve the chain
with the issuer so clients can verify the staple. A revoked certificate needs replacing.
```nginx
ssl_stapling            on;
ssl_stapling_verify     on;
ssl_trusted_certificate chain.pem;
resolver                127.0.0.53 valid=300s;
```

## How the prober confirms it
`ngxtls probe` checks every staple against the chain of the handshake that carried it
(tls::check_ocsp_staple: OCSP_basic_verify with only the issuer trusted, OCSP_resp_find_status
on the leaf's CertID, OCSP_check_validity with 300 s skew) and reports `ocsp.status`
`invalid` with `staple_status` and `staple_reason`; `check` turns that into this finding,
confirmed, for the server that answered (by port and SNI).

## Source
RFC 6960 sections 3.2 (response acceptance) and 4.2.2.2 (delegated responders); RFC 6066
section 8 (a client that gets an invalid staple must not accept it). nginx 1.22.1 staples an
`ssl_stapling_file` unchecked and caches only `good` answers from a responder (measured:
tests/integration/test_probe_ocsp.cpp).
)";

void check(const engine::context&, engine::finding_list&) {
  // Nothing to see in a config: the finding comes from probe evidence (check::probe_findings).
}

}  // namespace

engine::rule ocsp_staple_invalid() {
  engine::rule r{id,
                 engine::severity::error,
                 "the server staples an OCSP response clients must reject",
                 doc,
                 check,
                 /*probe_only=*/true};
  r.confirmed_by = engine::probe_question::staple_valid;
  return r;
}

}  // namespace ngxtls::rules
