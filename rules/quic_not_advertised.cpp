// quic-not-advertised: a server with QUIC and TCP TLS whose TCP responses carry no Alt-Svc
// naming its QUIC port, or an Alt-Svc that names a port nothing listens on with quic.

#include <algorithm>
#include <cctype>
#include <set>

#include "rules/add_header.hpp"
#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "quic-not-advertised";

constexpr const char* doc = R"(# quic-not-advertised

## What it flags
On nginx 1.25.0 or later, an http server that listens on QUIC (`listen ... quic`) and on TCP
TLS (`listen ... ssl`):
- when no `add_header Alt-Svc` in effect at the server or in any of its locations (through
  nginx's `add_header` inheritance, as for the HSTS rules: a level's own `add_header` list
  replaces the inherited one) and no `more_set_headers` names `Alt-Svc`: warning at the first
  `listen ... ssl` (a note when a location proxies: the upstream may send the header);
- when an `Alt-Svc` header advertises `h3` on a port of this host (`h3=":PORT"`) where no
  `listen ... quic` of the configuration is: warning at that `add_header`. An alternative with
  another host (`h3="cdn.example.net:443"`) or a port in a variable is not judged.

## Why it matters
nginx sends no `Alt-Svc` of its own (docs/nginx-facts.md#quic): without the header on the TCP
responses, browsers never learn that HTTP/3 is there and never use the QUIC listener, however
well it is configured. An `Alt-Svc` naming a port with no QUIC listener sends every browser
that cached it to a UDP port that does not answer: each new connection first waits for the
QUIC attempt to fail, then falls back to TCP.

## Example
```nginx
server {
    listen 443 ssl;
    listen 443 quic reuseport;
    server_name example.com;
}
```

## Fix
```nginx
add_header Alt-Svc 'h3=":443"; ma=86400' always;
```

## How the prober confirms it
Not yet: the probe reads the response headers of `HEAD /` over TCP; a check against the
`Alt-Svc` header is not written yet.

## Source
RFC 7838 (Alt-Svc) and RFC 9114 section 3.1.1; nginx's ngx_http_v3_module documentation
(`add_header Alt-Svc 'h3=":8443"; ma=86400';` "used to advertise the availability of HTTP/3");
docs/nginx-facts.md#quic (no Alt-Svc from nginx itself, measured on 1.26.3 and 1.30.6);
add_header inheritance: ngx_http_headers_module, measured by tests/integration/test_hsts_nginx.cpp.
)";

/// The ports of the `h3` alternatives of this host in an Alt-Svc value (`h3=":443"`); -1 for one
/// whose port is not a plain number (a variable).
std::vector<int> h3_ports(std::string_view value) {
  std::vector<int> out;
  for (std::size_t at = value.find("h3=\""); at != std::string_view::npos;
       at = value.find("h3=\"", at + 1)) {
    // "h3-29" and the like are other protocol ids; only h3 itself is HTTP/3.
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(value[at - 1])) || value[at - 1] == '-'))
      continue;
    const std::size_t start = at + 4;
    const std::size_t end = value.find('"', start);
    if (end == std::string_view::npos) break;
    const std::string_view authority = value.substr(start, end - start);
    if (authority.empty() || authority.front() != ':') continue;  // another host
    const std::string_view port = authority.substr(1);
    const bool digits =
        !port.empty() && port.size() <= 5 &&
        std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); });
    out.push_back(digits ? std::stoi(std::string(port)) : -1);
  }
  return out;
}

bool more_set_alt_svc(const config::directive& d) {
  for (const auto& a : d.args) {
    std::string v(a.value());
    for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v.find("alt-svc") != std::string::npos) return true;
  }
  return false;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (m.versions.nginx < model::version{1, 25, 0}) return;  // no QUIC: directive-arguments
  std::set<int> quic_ports;                                 // every QUIC port of the configuration
  for (const auto& k : m.sockets)
    if (k.quic && k.context == model::context_kind::http) quic_ports.insert(k.port);
  std::set<const config::directive*> seen;
  for (const auto& s : m.servers) {
    if (s.context != model::context_kind::http || !s.where || !model::has_tcp_tls(s)) continue;
    const auto quic = model::quic_sockets_of(m, s);
    if (quic.empty() || !seen.insert(s.where).second) continue;
    bool advertised = false;
    std::set<const config::directive*> wrong_port;
    auto judge = [&](const header_level& l) {
      for (const auto* d : l.headers) {
        if (!adds_header(*d, "Alt-Svc")) continue;
        advertised = true;
        for (int p : h3_ports(d->args[1].value()))
          if (p > 0 && !quic_ports.count(p)) wrong_port.insert(d);
      }
      for (const auto* d : l.more_set) advertised = advertised || more_set_alt_svc(*d);
    };
    visit_header_levels(ctx, s, [&](const header_level& here, const header_level& parent) {
      judge(here);
      judge(parent);
    });
    const std::string label = server_label(ctx, s);
    for (const auto* d : wrong_port) {
      std::string ports;
      for (int p : h3_ports(d->args[1].value()))
        if (p > 0 && !quic_ports.count(p)) ports += (ports.empty() ? "" : ", ") + std::to_string(p);
      auto f = ctx.make(id, engine::severity::warning,
                        "Alt-Svc advertises HTTP/3 on port " + ports +
                            ", where nothing listens with quic: browsers that cached it try a "
                            "UDP port that does not answer before falling back to TCP",
                        d);
      f.facts.push_back({"add_header Alt-Svc", std::string(d->args[1].value()), "", std::nullopt});
      f.fix = "add_header Alt-Svc 'h3=\":" + std::to_string(quic.front()->port) +
              "\"; ma=86400' always;";
      f.server = label;
      out.push_back(std::move(f));
    }
    if (advertised) continue;
    const bool proxied = passes_to_backend(s);
    auto f = ctx.make(id, proxied ? engine::severity::note : engine::severity::warning,
                      label + " listens on QUIC (" + socket_names(quic) +
                          ") but no Alt-Svc header on its TCP TLS responses advertises it: "
                          "browsers never use HTTP/3 here" +
                          (proxied ? " (unless the upstream's responses carry the header)" : ""),
                      default_anchor(s));
    f.facts.push_back({"add_header Alt-Svc", "(not set)", "server, http", std::nullopt});
    f.fix =
        "add_header Alt-Svc 'h3=\":" + std::to_string(quic.front()->port) + "\"; ma=86400' always;";
    f.server = label;
    for (const auto& l : s.listens)
      if (l.ssl && !l.quic) f.ports.push_back(l.port);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule quic_not_advertised() {
  engine::rule r{id, engine::severity::warning,
                 "QUIC listener that no Alt-Svc header advertises, or Alt-Svc naming a port "
                 "without QUIC",
                 doc, check};
  r.confirmed_by = engine::probe_question::none;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
