// weak-ciphers: ssl_ciphers (as the installed libssl expands it) allowing NULL, anonymous,
// export-grade, RC4, DES/3DES or MD5 suites, or key exchange without forward secrecy.

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "rules/common.hpp"
#include "tls/ciphers.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "weak-ciphers";

/// The fix of both findings (weak suites, no forward secrecy): ECDHE with AEAD only.
constexpr const char* cipher_fix =
    "ssl_ciphers "
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305;";

constexpr const char* doc = R"(# weak-ciphers

## What it flags
The effective TLS 1.2-and-below cipher list of a TLS server (`ssl_ciphers`, nginx's default
`HIGH:!aNULL:!MD5`, or an `ssl_conf_command CipherString` that overrides both), expanded by
the libssl ngxtls runs with, exactly as nginx hands it to SSL_CTX_set_cipher_list:
- Error: the string matches no cipher, or an `ssl_conf_command Ciphersuites` list is
  rejected (nginx refuses to start: `SSL_CTX_set_cipher_list(...) failed`).
- Error: the string matches only suites OpenSSL will not negotiate at its security level
  (default 1, or `@SECLEVEL=N`; what `openssl ciphers -s` drops: NULL encryption, aNULL,
  export) while TLS 1.2 or older is on: every such handshake fails (`ssl_ciphers aNULL:eNULL`:
  handshake failure on nginx 1.22.1, 1.26.3 and 1.30.6; docs/nginx-facts.md#no-protocol-left).
- Warning: suites with NULL encryption, no authentication (aNULL), export-grade or under
  128-bit keys, RC4, DES or 3DES, or MD5 MACs, among those OpenSSL negotiates at the string's
  security level (at level 1 NULL, aNULL and export suites are dropped, so only
  `@SECLEVEL=0` makes them reachable).
- Note: suites with static RSA key exchange (no forward secrecy), and CBC suites the client
  may choose because `ssl_prefer_server_ciphers` is off.
A server whose effective `ssl_protocols` enables TLS 1.3 only never uses these suites: only the
error (a list that matches nothing stops nginx) applies to it.
When the assumed OpenSSL (`--openssl-version`) differs from the linked one in major.minor,
the message says so: expansions change between OpenSSL releases.

## Why it matters
NULL and aNULL suites give no confidentiality or no authentication (a man in the middle needs
no certificate). RC4, DES, 3DES (Sweet32) and export suites are broken or too small. With
static RSA key exchange one leaked private key decrypts every recorded session. The server
may not pick them, but a client (or an attacker forcing a downgrade) that offers only them
gets them.

## Example
```nginx
ssl_ciphers ALL:!EXPORT;        # still allows anonymous (ADH) suites and static RSA key exchange
```

## Fix
Mozilla "intermediate" profile (`ngxtls harden --profile intermediate`):
```nginx
ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384;
ssl_prefer_server_ciphers off;   # every suite is strong: let clients pick the fastest
```

## How the prober confirms it
The prober reports the negotiated cipher; `openssl s_client -cipher 'DES-CBC3-SHA'` against
the host shows whether a weak suite is accepted.

## Source
The installed libssl (`openssl ciphers -v` equivalent: SSL_CTX_set_cipher_list, then
SSL_CTX_get_ciphers); nginx default `HIGH:!aNULL:!MD5` (docs/nginx-facts.md#builtin-defaults); nginx
ngx_ssl_ciphers (src/event/ngx_event_openssl.c) fails the config when no cipher matches;
RFC 7465 (no RC4), Sweet32 (CVE-2016-2183), Mozilla Server Side TLS.
)";

// The weakness of one suite, or "" when none.
std::string weakness(const tls::cipher_info& c);

// A cipher string as the linked libssl expands it, with its suites sorted into what the
// rule reports. Worked out once per distinct string: thousands of servers share a few.
struct expansion {
  std::vector<tls::cipher_info> ciphers;
  std::string error;
  std::string weak_what;              // the weaknesses found, ", "-joined ("" = none)
  std::vector<std::string> weak_all;  // the weak suites, grouped by weakness
  std::vector<std::string> non_fs;    // static RSA key exchange
  std::vector<std::string> cbc;       // not AEAD
  std::size_t negotiable = 0;         // suites OpenSSL negotiates at the string's security level

  void classify() {
    std::map<std::string, std::vector<std::string>> weak;
    for (const auto& c : ciphers) {
      // Below the security level (aNULL, eNULL, export at level 1): never negotiated, so not
      // allowed, whatever the string says.
      if (!c.negotiable) continue;
      // PSK suites need a PSK callback, which nginx never sets: they are never negotiated.
      if (c.kx.find("PSK") != std::string::npos || c.auth == "PSK") continue;
      ++negotiable;
      if (auto w = weakness(c); !w.empty())
        weak[w].push_back(c.name);
      else if (c.kx == "RSA")
        non_fs.push_back(c.name);
      if (!c.aead) cbc.push_back(c.name);
    }
    for (const auto& [w, list] : weak) {
      weak_what += (weak_what.empty() ? "" : ", ") + w;
      weak_all.insert(weak_all.end(), list.begin(), list.end());
    }
  }
};

const expansion& expand(const std::string& spec) {
  static std::map<std::string, expansion> cache;
  static std::mutex
      mu;  // engine::run runs rules on several threads (fleets: one rule per model at a time)
  const std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(spec);
  if (it != cache.end()) return it->second;
  expansion e;
  try {
    e.ciphers = tls::expand_cipher_string(spec);
    e.classify();
  } catch (const std::exception& ex) {
    e.error = ex.what();
  }
  return cache.emplace(spec, std::move(e)).first->second;
}

std::string weakness(const tls::cipher_info& c) {
  if (c.enc == "None" || c.enc.rfind("None", 0) == 0) return "NULL encryption";
  if (c.auth == "None") return "no authentication (aNULL)";
  if (c.enc.find("RC4") != std::string::npos) return "RC4";
  if (c.enc.find("DES") != std::string::npos) return "DES/3DES";
  if (c.mac == "MD5") return "MD5";
  if (c.bits > 0 && c.bits < 128) return "export-grade key";
  return {};
}

// True when `protocols` enables a protocol whose suites ssl_ciphers chooses (TLS 1.2 or lower).
bool legacy_protocol_enabled(const model::setting* protocols) {
  for (const char* p : {"SSLv2", "SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2"})
    if (model::protocols_enable(protocols, p)) return true;
  return false;
}

std::vector<std::string> names_of(const std::vector<tls::cipher_info>& ciphers) {
  std::vector<std::string> out;
  for (const auto& c : ciphers) out.push_back(c.name);
  return out;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 6; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 6) out += " and " + std::to_string(names.size() - 6) + " more";
  return out;
}

// The last `ssl_conf_command NAME value` for NAME (case-insensitive as OpenSSL's SSL_CONF).
const model::occurrence* conf_command(const model::server& s, const std::string& name) {
  const auto* st = s.get("ssl_conf_command");
  if (!st) return nullptr;
  const model::occurrence* found = nullptr;
  auto lower = [](char ch) { return std::tolower(static_cast<unsigned char>(ch)); };
  for (const auto& o : st->values) {
    if (o.args.size() < 2) continue;
    const std::string_view n = o.args[0];
    if (n.size() == name.size() && std::equal(n.begin(), n.end(), name.begin(),
                                              [&](char a, char b) { return lower(a) == lower(b); }))
      found = &o;
  }
  return found;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  const std::string linked = tls::openssl_version();
  const std::string caveat = openssl_differs(m) ? " (expanded with the linked OpenSSL " + linked +
                                                      "; assumed " + m.versions.openssl.str() + ")"
                                                : "";
  for (const auto& s : m.servers) {
    if (!s.has_ssl) continue;
    const auto* ciphers = s.get("ssl_ciphers");
    std::string spec(ciphers ? ciphers->first() : "HIGH:!aNULL:!MD5");
    const config::directive* at = anchor_of(s, "ssl_ciphers");
    std::string source = ciphers && ciphers->from != model::origin::nginx_default
                             ? "ssl_ciphers"
                             : "nginx's default ssl_ciphers";
    if (const auto* cs = conf_command(s, "CipherString")) {
      spec = std::string(cs->args[1]);
      at = cs->where;
      source = "ssl_conf_command CipherString";
    }
    if (spec.find('$') != std::string::npos) continue;
    auto evidence = [&](engine::finding& f) {
      f.facts.push_back(setting_evidence(ctx, s, "ssl_ciphers"));
      f.facts.push_back(setting_evidence(ctx, s, "ssl_prefer_server_ciphers"));
      if (s.get("ssl_conf_command"))
        f.facts.push_back(setting_evidence(ctx, s, "ssl_conf_command"));
      f.server = server_label(ctx, s);
    };
    if (const auto* suites = conf_command(s, "Ciphersuites")) {
      try {
        tls::expand_tls13_ciphersuites(std::string(suites->args[1]));
      } catch (const std::exception&) {
        auto f =
            ctx.make(id, engine::severity::error,
                     "ssl_conf_command Ciphersuites \"" + std::string(suites->args[1]) +
                         "\" names no TLS 1.3 suite this OpenSSL knows: nginx fails to load the "
                         "configuration" +
                         caveat,
                     suites->where);
        evidence(f);
        f.fix =
            "ssl_conf_command Ciphersuites "
            "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256;";
        out.push_back(std::move(f));
      }
    }
    const auto& e = expand(spec);
    if (!e.error.empty()) {
      auto f = ctx.make(id, engine::severity::error,
                        source + " \"" + spec +
                            "\" matches no cipher: nginx fails with "
                            "SSL_CTX_set_cipher_list() failed" +
                            caveat,
                        at);
      evidence(f);
      f.fix = "ssl_ciphers HIGH:!aNULL:!MD5;";
      out.push_back(std::move(f));
      continue;
    }
    // ssl_ciphers sets the TLS 1.2-and-below suites only: a server that speaks TLS 1.3 alone
    // never negotiates one of them (a list that matches nothing still stops nginx, above).
    const auto* protocols = s.get("ssl_protocols");
    if (protocols && !legacy_protocol_enabled(protocols)) continue;
    if (e.negotiable == 0) {
      auto f = ctx.make(id, engine::severity::error,
                        source + " \"" + spec +
                            "\" leaves no suite OpenSSL negotiates at its security level (what "
                            "it matches, " +
                            join_names(names_of(e.ciphers)) +
                            ", `openssl ciphers -s` drops): every TLS 1.2 and older handshake "
                            "fails" +
                            caveat,
                        at);
      evidence(f);
      f.fix = cipher_fix;
      out.push_back(std::move(f));
      continue;
    }
    const auto& non_fs = e.non_fs;
    const auto& cbc = e.cbc;
    const bool weak = !e.weak_all.empty();
    if (weak) {
      auto f = ctx.make(
          id, engine::severity::warning,
          source + " allows " + e.weak_what + " suites: " + join_names(e.weak_all) + caveat, at);
      evidence(f);
      f.fix = cipher_fix;
      out.push_back(std::move(f));
    } else if (!non_fs.empty()) {
      auto f = ctx.make(id, engine::severity::note,
                        source + " allows static RSA key exchange (no forward secrecy): " +
                            join_names(non_fs) + caveat,
                        at);
      evidence(f);
      f.fix = cipher_fix;
      out.push_back(std::move(f));
    }
    if (!weak && non_fs.empty() && !cbc.empty() &&
        !model::is_on(s.get("ssl_prefer_server_ciphers"))) {
      auto f = ctx.make(id, engine::severity::note,
                        "ssl_prefer_server_ciphers is off, so clients may pick the CBC suites " +
                            source + " allows (" + join_names(cbc) +
                            "): drop them or turn server preference on",
                        anchor_of(s, "ssl_prefer_server_ciphers"));
      evidence(f);
      f.fix = "ssl_prefer_server_ciphers on;";
      out.push_back(std::move(f));
    }
  }
}

}  // namespace

engine::rule weak_ciphers() {
  return {id, engine::severity::warning,
          "Cipher list allows NULL, anonymous, export, RC4, 3DES or MD5 suites, or lacks forward "
          "secrecy",
          doc, check};
}

}  // namespace ngxtls::rules
