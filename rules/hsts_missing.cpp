// hsts-missing: a TLS http server that sends no Strict-Transport-Security header.

#include <set>

#include "rules/add_header.hpp"
#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "hsts-missing";

constexpr const char* doc = R"(# hsts-missing

## What it flags
A TLS server in `http` (not one that rejects every handshake, nor one whose server level
ends every request with `return 444`, which sends no response) where no `add_header
Strict-Transport-Security ...` is in effect: not in the server, not inherited from `http`,
and not in any of its locations. A note: HSTS is a promise for the whole site (and with
`includeSubDomains` its subdomains) that must hold before it is sent, so its absence is a
choice to confirm, not a defect that should fail every existing CI run. Servers whose HSTS comes from `more_set_headers`
(headers-more) are not judged. When only some locations lose the header, `hsts-dropped`
reports them instead.

## Why it matters
Without HSTS a browser that is sent to `http://` (a typed name, an old link, an attacker on
the network) makes a plain-text request first, which can be intercepted or redirected (SSL
stripping). `Strict-Transport-Security` tells the browser to use HTTPS only for the site for
`max-age` seconds. Responses proxied from an application may carry it: then the finding holds
only where the application leaves it out.

## Example
```nginx
server {
    listen 443 ssl;
    server_name example.com;
    location / { proxy_pass http://app; }
}
```

## Fix
```nginx
add_header Strict-Transport-Security "max-age=63072000" always;
```
in the server (or the `http` block), and in every location that has `add_header` of its own
(see `hsts-dropped`).

## How the prober confirms it
`ngxtls check` reads the headers of the probe's `HEAD /` response: no
`Strict-Transport-Security` confirms it, the header refutes it (an upstream sends it).
`check --sandbox` leaves it not testable: the sandbox answers with its own response, not the
server's `add_header`, locations or upstreams.

## Source
RFC 6797 (HTTP Strict Transport Security); nginx docs, ngx_http_headers_module `add_header`
(inherited from the previous level only when the level has none of its own; `always` for
every response code).
)";

bool more_headers_sets_hsts(const config::directive& d) {
  if (d.name != "more_set_headers") return false;
  for (const auto& a : d.args) {
    std::string v(a.value());
    for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v.find("strict-transport-security") != std::string::npos) return true;
  }
  return false;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  std::set<const config::directive*> seen;
  for (const auto& s : m.servers) {
    if (!s.has_ssl || s.context != model::context_kind::http || !s.where) continue;
    if (model::is_on(s.get("ssl_reject_handshake")) || closes_every_request(s)) continue;
    if (!seen.insert(s.where).second) continue;
    bool anywhere = false;
    auto more_headers = [](const header_level& l) {
      for (const auto* d : l.more_set)
        if (more_headers_sets_hsts(*d)) return true;
      return false;
    };
    visit_header_levels(ctx, s, [&](const header_level& here, const header_level& parent) {
      anywhere = anywhere || has_header(here.headers, "Strict-Transport-Security") ||
                 has_header(parent.headers, "Strict-Transport-Security") || more_headers(here) ||
                 more_headers(parent);
    });
    if (anywhere) continue;
    const bool proxied = passes_to_backend(s);
    // An unnamed server's label already reads "server at FILE:LINE".
    const std::string label = server_label(ctx, s);
    auto f = ctx.make(
        id, engine::severity::note,
        (label.rfind("server", 0) == 0 ? "TLS " : "TLS server ") + label +
            " sends no Strict-Transport-Security header: browsers may still try http:// first, "
            "which an attacker on the network can intercept" +
            (proxied ? " (unless every upstream response carries the header)" : ""),
        default_anchor(s));
    f.facts.push_back(
        {"add_header Strict-Transport-Security", "(not set)", "server, http", std::nullopt});
    f.fix = "add_header Strict-Transport-Security \"max-age=63072000\" always;";
    f.server = server_label(ctx, s);
    for (const auto& l : s.listens)
      if (l.ssl) f.ports.push_back(l.port);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule hsts_missing() {
  engine::rule r{id, engine::severity::note, "TLS server without Strict-Transport-Security", doc,
                 check};
  r.confirmed_by = engine::probe_question::hsts_header_served;
  return r;
}

}  // namespace ngxtls::rules
