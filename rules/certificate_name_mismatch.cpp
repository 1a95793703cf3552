// certificate-name-mismatch: a server_name that none of the server's certificates covers.

#include <algorithm>

#include "rules/common.hpp"
#include "rules/rules.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "certificate-name-mismatch";

constexpr const char* doc = R"(# certificate-name-mismatch

## What it flags
A literal `server_name` of a TLS server that no certificate of that server covers by its
subjectAltName DNS entries (exact, or a `*.` wildcard matching one label). Warning. Regular
expression names (`~...`), `_`, `""`, `localhost` and names with `$` are skipped; a name
`.example.com` (nginx's shorthand for `example.com` and `*.example.com`) needs both. With no
readable certificate the rule says nothing (`file-not-inspected` covers that).

## Why it matters
Clients match the requested name against the certificate's SANs only (the subject CN has been
ignored by browsers since 2017, RFC 6125 / CA/B Forum). A name served by this block with a
certificate that does not list it gets a name-mismatch error in every client: often a
`server_name` added without reissuing the certificate.

## Example
```nginx
server {
    listen 443 ssl;
    server_name example.com www.example.com api.example.com;   # certificate lists the first two
    ssl_certificate /etc/nginx/tls/example.com.pem;
}
```

## Fix
Reissue the certificate with every name (`certbot --expand -d ...`), or move the name to a
server with its own certificate.

## How the prober confirms it
`ngxtls probe --sni api.example.com HOST` reports the certificate's names; clients fail
verification.

## Source
RFC 6125 section 6.4 (DNS-ID matching, wildcard in the left-most label only); RFC 2818
section 3.1; nginx docs, server_name (`.example.com` form, regular expressions).
)";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool covers(const std::string& san, const std::string& name) {
  if (san == name) return true;
  if (san.size() > 2 && san[0] == '*' && san[1] == '.') {
    auto dot = name.find('.');
    return dot != std::string::npos && dot > 0 && name.substr(dot) == san.substr(1);
  }
  return false;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl || s.names.empty()) continue;
    std::vector<std::string> sans;
    bool any = false;
    for (const auto& c : certificates_of(ctx, s)) {
      const auto* chain = c.chain;
      if (!chain) continue;
      any = true;
      for (const auto& n : chain->front().dns_names) sans.push_back(lower(n));
    }
    if (!any) continue;
    std::vector<std::string> missing;
    for (const auto& raw : s.names) {
      std::string name = lower(raw);
      if (name.empty() || name == "_" || name == "localhost" || name[0] == '~' ||
          name.find('$') != std::string::npos)
        continue;
      std::vector<std::string> wanted;
      if (name[0] == '.') {
        wanted = {name.substr(1), "*" + name};
      } else {
        wanted = {name};
      }
      for (const auto& w : wanted) {
        bool ok = false;
        for (const auto& san : sans) ok = ok || covers(san, w) || (w[0] == '*' && san == w);
        if (!ok) missing.push_back(w);
      }
    }
    if (missing.empty()) continue;
    std::string list, san_list;
    for (const auto& n : missing) list += (list.empty() ? "" : ", ") + n;
    for (const auto& n : sans) san_list += (san_list.empty() ? "" : ", ") + n;
    const auto* at = server_name_directive(s);
    auto f = ctx.make(id, engine::severity::warning,
                      "server_name " + list + (missing.size() == 1 ? " is" : " are") +
                          " not covered by the certificate's names (" +
                          (san_list.empty() ? "no SAN DNS names" : san_list) +
                          "): clients requesting it get a name mismatch",
                      at ? at : default_anchor(s));
    f.facts.push_back({"certificate DNS names", san_list.empty() ? "(none)" : san_list,
                       "certificate", std::nullopt});
    f.facts.push_back(setting_evidence(ctx, s, "ssl_certificate"));
    f.fix = "# reissue with every name, e.g.:\ncertbot certonly --expand -d " + missing.front();
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule certificate_name_mismatch() {
  return {id, engine::severity::warning, "server_name not covered by the certificate's SANs", doc,
          check};
}

}  // namespace ngxtls::rules
