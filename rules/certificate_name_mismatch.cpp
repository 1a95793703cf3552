// certificate-name-mismatch: a server_name that none of the server's certificates covers.

#include <algorithm>
#include <cctype>
#include <optional>
#include <regex>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "certificate-name-mismatch";

constexpr const char* doc = R"(# certificate-name-mismatch

## What it flags
A literal `server_name` of a TLS server that no certificate of that server covers by its
subjectAltName DNS entries (exact, or a `*.` wildcard matching one label). Warning. Names are
matched as nginx matches them: `.example.com` (shorthand for `example.com` and
`*.example.com`) needs both; a suffix wildcard `mail.*` reaches `mail.` followed by any
domain and is covered when the certificate lists one such name (or any `*.` wildcard); a
regular expression (`~...`, case-insensitive as nginx compiles it) is covered when it accepts
one of the certificate's names, and is skipped when the certificate has a wildcard name or the
expression uses PCRE syntax ngxtls cannot evaluate. `_`, `""`, `localhost` and names with `$`
are skipped. With no readable certificate the rule says nothing (`file-not-inspected` covers
that). The fix is a `certbot --expand` request with the certificate's names and the missing
ones; patterns are never put in it (a CA issues no `mail.*`): the fix asks for the host names.

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

// A SAN covers a host name: equal, or a `*.` wildcard standing for its first label (RFC 6125).
bool covers(const std::string& san, const std::string& name) {
  if (san == name) return true;
  if (san.size() > 2 && san[0] == '*' && san[1] == '.') {
    auto dot = name.find('.');
    return dot != std::string::npos && dot > 0 && name.substr(dot) == san.substr(1);
  }
  return false;
}

// A name certbot accepts for `-d`: labels of letters, digits and hyphens, optionally behind a
// leading `*.` (a DNS-01 wildcard request).
bool certbot_name(const std::string& name) {
  std::string_view rest = name;
  if (rest.rfind("*.", 0) == 0) rest.remove_prefix(2);
  if (rest.empty() || rest.size() > 253 || rest.front() == '.' || rest.back() == '.') return false;
  bool dot = false;
  for (char c : rest) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
    if (!ok || (c == '.' && dot)) return false;
    dot = c == '.';
  }
  return rest.find('.') != std::string_view::npos;
}

// What a server_name reaches, as nginx's find_virtual_server matches a Host (or SNI) name:
// `is_covered` answers whether the certificate covers it, nullopt when that cannot be told.
// Each entry of `wanted` is a name a client can request that the certificate must list.
struct name_check {
  std::vector<std::string> wanted;  // names (or patterns) that are not covered
  bool known = true;
};

// nginx matches a regular expression server_name case-insensitively (NGX_REGEX_CASELESS) against
// the whole requested name it was written for. std::regex has no PCRE named groups: they
// become plain groups; an expression std::regex cannot compile is left alone.
std::optional<std::regex> server_name_regex(std::string pattern) {
  for (const char* named : {"(?<", "(?P<"}) {
    for (auto p = pattern.find(named); p != std::string::npos; p = pattern.find(named, p)) {
      auto close = pattern.find('>', p);
      if (close == std::string::npos) return std::nullopt;
      pattern.erase(p + 1, close - p);
    }
  }
  try {
    return std::regex(pattern, std::regex::ECMAScript | std::regex::icase);
  } catch (const std::regex_error&) {
    return std::nullopt;
  }
}

name_check check_name(const std::string& name, const std::vector<std::string>& sans) {
  name_check r;
  auto any_san = [&](auto pred) { return std::any_of(sans.begin(), sans.end(), pred); };
  if (name[0] == '~') {
    // The certificate covers the expression when one name it lists is a name the expression
    // accepts. A wildcard SAN stands for names the expression may or may not accept: unknown.
    // The wildcard test first: it needs no compiled expression (a fleet has 10,000s).
    if (any_san([](const std::string& san) { return san.rfind("*.", 0) == 0; })) {
      r.known = false;
      return r;
    }
    auto re = server_name_regex(name.substr(1));
    if (!re) {
      r.known = false;
      return r;
    }
    if (!any_san([&](const std::string& san) { return std::regex_search(san, *re); }))
      r.wanted.push_back(name);
    return r;
  }
  if (name.size() > 2 && name.compare(name.size() - 2, 2, ".*") == 0) {
    // `mail.*` reaches mail.<anything>: covered where the certificate lists one such name
    // (or a wildcard, which covers mail.<its domain>).
    const std::string prefix = name.substr(0, name.size() - 1);
    if (!any_san([&](const std::string& san) {
          return san.rfind(prefix, 0) == 0 || (san.rfind("*.", 0) == 0 && san.size() > 2);
        }))
      r.wanted.push_back(name);
    return r;
  }
  std::vector<std::string> wanted;
  if (name[0] == '.') {
    wanted = {name.substr(1), "*" + name};
  } else {
    wanted = {name};
  }
  for (const auto& w : wanted) {
    const bool ok = any_san(
        [&](const std::string& san) { return covers(san, w) || (w[0] == '*' && san == w); });
    if (!ok) r.wanted.push_back(w);
  }
  return r;
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
      if (name.empty() || name == "_" || name == "localhost" ||
          (name[0] != '~' && name.find('$') != std::string::npos))
        continue;
      auto r = check_name(name, sans);
      missing.insert(missing.end(), r.wanted.begin(), r.wanted.end());
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
    // `--expand` wants every name the certificate keeps plus the new ones. Patterns (`mail.*`,
    // regular expressions) are no names a CA issues for: the operator lists the real names.
    std::string request = "certbot certonly --expand";
    std::vector<std::string> patterns;
    bool added = false;
    auto arg = [](const std::string& n) { return n[0] == '*' ? "'" + n + "'" : n; };
    for (const auto& n : sans)
      if (certbot_name(n)) request += " -d " + arg(n);
    for (const auto& n : missing) {
      if (certbot_name(n)) {
        request += " -d " + arg(n);
        added = true;
      } else {
        patterns.push_back(n);
      }
    }
    f.fix = "# reissue with every name";
    if (!patterns.empty()) {
      std::string p;
      for (const auto& n : patterns) p += (p.empty() ? "" : ", ") + n;
      f.fix += "; " + p + (patterns.size() == 1 ? " is a pattern" : " are patterns") +
               ": list the host names " + (patterns.size() == 1 ? "it" : "they") + " should serve";
    }
    f.fix += added ? ", e.g.:\n" + request : "";
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
