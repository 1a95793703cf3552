// ocsp-stapling-dead: `ssl_stapling on` that can never staple.

#include <arpa/inet.h>

#include "engine/fix.hpp"
#include "rules/common.hpp"
#include "rules/variables.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "ocsp-stapling-dead";

constexpr const char* doc = R"(# ocsp-stapling-dead

## What it flags
`ssl_stapling on` in a server whose certificate (read with libssl):
- has no OCSP responder URL (and there is no `ssl_stapling_responder` or
  `ssl_stapling_file`): every Let's Encrypt certificate since 2025-05-07;
- or whose issuer is in none of the `ssl_certificate` chain, `ssl_trusted_certificate` and
  (only while `ssl_verify_client` is on, optional or optional_no_ca) `ssl_client_certificate`
  (a leaf-only certificate file; a self-signed leaf).
Warning: the config staples nothing and tells readers it does.

A note when no `resolver` is set and the responder is a host name: nginx resolves it once at
load; if that fails stapling is off, else the address stays frozen until the next reload.

A warning for a Let's Encrypt certificate (under `/etc/letsencrypt/`, or issued by Let's
Encrypt when readable) even when the file is not on this machine, unless
`ssl_stapling_responder` names another responder: Let's Encrypt certificates carry no OCSP URL
since 2025-05-07 and its OCSP responders are off since 2025-08-06.

A certificate without an OCSP URL where stapling is not configured is no finding. A
certificate that cannot be read here is an error with `--strict-files`; otherwise a note
saying what could not be checked when no `resolver` is in scope (the responder URL, the issuer,
and whether the responder is a host name nginx resolves only at load), and no finding of
this rule when a resolver is there (`file-not-inspected` lists the file). A certificate chosen
per handshake by a variable is a note that stapling was not inspected; one naming a variable
nginx does not know is no finding here (nginx does not start: `certificate-variable-unknown`).

## Why it matters
`nginx -t` exits 0 and prints only a `[warn]` on stderr (not in the configured error_log):
`"ssl_stapling" ignored, no OCSP responder URL in the certificate "F"` or
`"ssl_stapling" ignored, issuer certificate not found for certificate "F"`. The setting looks
active, clients get no staple, and monitoring that reads the config is misled.

## Example
```nginx
ssl_certificate     /etc/letsencrypt/live/example.com/fullchain.pem;  # no OCSP URL since 2025
ssl_stapling        on;
```

## Fix
Remove `ssl_stapling on` for certificates without an OCSP URL. For a certificate that has
one, give nginx the issuer and a resolver:
```nginx
ssl_certificate         fullchain.pem;         # leaf + intermediate
ssl_trusted_certificate chain.pem;             # the issuer (for ssl_stapling_verify)
resolver                127.0.0.53 valid=300s;
```

## How the prober confirms it
`ngxtls probe` retries over several connections and at least 2 s (staples are fetched lazily
per worker) and reports the staple absent, or not applicable when the certificate has no URL.
`check` confirms this finding only when no staple arrives, and refutes it only when every staple
is valid (checked as a client would); a staple that arrives but is not valid leaves it not
testable and is reported as `ocsp-staple-invalid`.

## Source
docs/nginx-facts.md#ocsp-stapling-quiet (nginx 1.22.1 `nginx -t` warnings, measured; shared cases B09, B10, B11);
ssl_client_certificate supplies the issuer only with client verification on (measured in
tests/integration/test_tls_stapling_nginx.cpp, which corrects docs/nginx-facts.md#ocsp-stapling-quiet);
nginx src/event/ngx_event_openssl_stapling.c checks the issuer before the responder URL;
Let's Encrypt, "Ending OCSP Support in 2025" (letsencrypt.org/2024/12/05): no OCSP URL in
certificates from 2025-05-07, responders turned off 2025-08-06.
)";

// Where certbot keeps Let's Encrypt certificates.
constexpr std::string_view lets_encrypt_dir = "/etc/letsencrypt/";

bool is_ip_literal(const std::string& host) {
  unsigned char buf[16];
  std::string h = host;
  if (!h.empty() && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

// The host part of an http URL ("http://ocsp.example.com:80/x" -> "ocsp.example.com").
std::string url_host(const std::string& url) {
  std::string rest = url;
  if (auto p = rest.find("://"); p != std::string::npos) rest = rest.substr(p + 3);
  rest = rest.substr(0, rest.find('/'));
  if (!rest.empty() && rest.front() == '[') return rest.substr(0, rest.find(']') + 1);
  return rest.substr(0, rest.find(':'));
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  const bool strict = ctx.options().strict_files;
  for (const auto& s : m.servers) {
    if (!s.has_ssl || !model::is_on(s.get("ssl_stapling"))) continue;
    if (s.get("ssl_stapling_file"))
      continue;  // nginx staples from the file, no URL or issuer needed
    const auto* stapling = s.get("ssl_stapling");
    const auto* certs = s.get("ssl_certificate");
    if (!certs) continue;
    std::vector<std::string> cas;
    // ssl_client_certificate feeds the issuer store only while client verification is on
    // (measured: tests/integration/test_tls_stapling_nginx.cpp, nginx 1.22.1).
    const std::string_view verify =
        s.get("ssl_verify_client") ? s.get("ssl_verify_client")->first() : "off";
    const bool client_cas = verify == "on" || verify == "optional" || verify == "optional_no_ca";
    for (const char* n : {"ssl_trusted_certificate", "ssl_client_certificate"}) {
      if (std::string(n) == "ssl_client_certificate" && !client_cas) continue;
      if (const auto* st = s.get(n); st && !st->first().empty() && !dynamic_path(st->first()))
        cas.push_back(ctx.resolve(st->first()));
    }
    const auto* responder = s.get("ssl_stapling_responder");
    for (const auto& occ : certs->values) {
      if (occ.args.empty()) continue;
      const std::string arg(occ.args.front());
      auto base_evidence = [&](engine::finding& f) {
        f.facts.push_back(setting_evidence(ctx, s, "ssl_stapling"));
        f.facts.push_back({"ssl_certificate", arg,
                           model::to_string(certs->from, s.context == model::context_kind::stream),
                           ctx.where(occ.where)});
        f.server = server_label(ctx, s);
        for (const auto& l : s.listens) f.ports.push_back(l.port);
      };
      if (dynamic_path(arg)) {
        // A variable nginx does not know stops nginx (certificate-variable-unknown): the
        // certificate is not chosen at run time at all.
        const auto* block = enclosing_block(m, s);
        bool unknown = false;
        for (const auto& n : referenced_variables(arg))
          unknown = unknown || (block && !variables_of(ctx, *block).known(n, s.context));
        if (unknown) continue;
        auto f = ctx.make(
            id, engine::severity::note,
            "certificate \"" + arg + "\" is chosen at run time: stapling not inspected here",
            occ.where);
        base_evidence(f);
        out.push_back(std::move(f));
        continue;
      }
      const std::string path = ctx.resolve(arg);
      const auto& l = ctx.files().certificate(path);
      const bool readable = l.facts && !l.facts->empty();
      // Let's Encrypt: known from the path even when the file is not here, else from the issuer.
      const bool lets_encrypt =
          path.rfind(lets_encrypt_dir, 0) == 0 ||
          (readable && l.facts->front().issuer.find("O=Let's Encrypt") != std::string::npos);
      if (lets_encrypt && !responder) {
        auto f = ctx.make(
            id, engine::severity::warning,
            "ssl_stapling is on for the Let's Encrypt certificate \"" + path + "\"" +
                (readable ? std::string()
                          : std::string(l.missing ? " (not on this machine)" : " (unreadable)")) +
                ": Let's Encrypt certificates carry no OCSP responder URL since 2025-05-07 and "
                "its OCSP responders are off since 2025-08-06, so no client ever gets a staple",
            stapling->where() ? stapling->where() : occ.where);
        base_evidence(f);
        f.fix = "ssl_stapling off;  # Let's Encrypt ended OCSP";
        out.push_back(std::move(f));
        continue;
      }
      if (!readable) {
        // What could not be known: the responder URL, the issuer, and (with no resolver in
        // scope) whether the responder is a host name that nginx resolves only once.
        const bool resolver = s.get("resolver") != nullptr;
        if (!strict && resolver) continue;  // file-not-inspected lists the file
        auto f = ctx.make(
            id, strict ? engine::severity::error : engine::severity::note,
            "certificate \"" + path + "\" " +
                (l.missing ? std::string("is not on this machine")
                           : "cannot be read (" + l.error + ")") +
                (strict ? ""
                        : ": whether it names an OCSP responder, whether its issuer is available, "
                          "and whether the responder is a host name (no `resolver` is in scope "
                          "to resolve it after load) could not be checked"),
            occ.where);
        base_evidence(f);
        f.facts.push_back(setting_evidence(ctx, s, "resolver"));
        out.push_back(std::move(f));
        continue;
      }
      const auto& leaf = l.facts->front();
      auto issuer = ctx.files().issuer_available(path, cas);
      if (issuer && !*issuer) {
        auto f = ctx.make(id, engine::severity::warning,
                          "ssl_stapling is on but nginx cannot find the issuer of \"" + path +
                              "\" (not in the certificate file, ssl_trusted_certificate or, with "
                              "client verification on, ssl_client_certificate): nginx ignores "
                              "stapling with a warning and "
                              "no client ever gets a staple",
                          stapling->where() ? stapling->where() : occ.where);
        base_evidence(f);
        f.facts.push_back(
            {"certificates in file", std::to_string(l.facts->size()), "file", std::nullopt});
        f.facts.push_back({"issuer", leaf.issuer, "certificate", std::nullopt});
        f.fix =
            "ssl_certificate fullchain.pem;          # leaf followed by its intermediate\n"
            "ssl_trusted_certificate issuer-chain.pem; # or name the issuer here";
        out.push_back(std::move(f));
        continue;
      }
      if (leaf.ocsp_urls.empty() && !responder) {
        auto f = ctx.make(id, engine::severity::warning,
                          "ssl_stapling is on but certificate \"" + path +
                              "\" has no OCSP responder URL: nginx ignores stapling with a warning "
                              "and no client ever gets a staple",
                          stapling->where() ? stapling->where() : occ.where);
        base_evidence(f);
        f.facts.push_back({"OCSP responder URL", "(none)", "certificate", std::nullopt});
        f.fix = "ssl_stapling off;  # the certificate names no OCSP responder";
        // Mechanical only where turning it off touches this server alone and its only certificate.
        if (stapling->from == model::origin::server && certs->values.size() == 1 &&
            stapling->where())
          if (auto e = engine::replace_directive(
                  *m.cfg, *stapling->where(),
                  "ssl_stapling off;  # ngxtls: the certificate names no OCSP responder"))
            f.edits.push_back(*e);
        out.push_back(std::move(f));
        continue;
      }
      std::string url = responder ? std::string(responder->first()) : leaf.ocsp_urls.front();
      std::string host = url_host(url);
      if (!host.empty() && !is_ip_literal(host) && !s.get("resolver")) {
        auto f =
            ctx.make(id, engine::severity::note,
                     "ssl_stapling has no `resolver`: nginx resolves the OCSP responder \"" + host +
                         "\" once at load; if that fails stapling is off, else its "
                         "address stays frozen until the next reload",
                     stapling->where() ? stapling->where() : occ.where);
        base_evidence(f);
        f.facts.push_back({"OCSP responder URL", url,
                           responder ? "ssl_stapling_responder" : "certificate", std::nullopt});
        f.fix = "resolver 127.0.0.53 valid=300s;  # your DNS resolver\nresolver_timeout 5s;";
        out.push_back(std::move(f));
      }
    }
  }
}

}  // namespace

engine::rule ocsp_stapling_dead() {
  engine::rule r{id, engine::severity::warning,
                 "ssl_stapling on for a certificate that can never be stapled", doc, check};
  r.confirmed_by = engine::probe_question::staple_present;
  return r;
}

}  // namespace ngxtls::rules
