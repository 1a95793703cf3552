// quic-not-advertised: a server with QUIC and TCP TLS whose TCP responses carry no Alt-Svc
// naming its QUIC port, or an Alt-Svc that names a port nothing listens on with quic.

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <utility>
#include <vector>

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
- when a level that had `Alt-Svc` from the enclosing one (http, server, location) loses it to
  an `add_header` of its own (or `add_header_inherit off`): its responses carry no Alt-Svc. A
  warning when that level is the server or `location /` / `location = /` (where a browser's
  first request lands), a note for another location (a browser that reaches another page of
  the site learns of HTTP/3 there: Alt-Svc holds for the whole origin). Not judged when a
  `more_set_headers` names Alt-Svc;
- when `Alt-Svc` is added without `always` in a level that answers every request with a
  `return` of a status other than 200, 201, 204, 206, 301, 302, 303, 304, 307 and 308: nginx
  adds it to none of them (at the `return`: a warning at the server level or `location /` /
  `location = /`, else a note);
- when an `Alt-Svc` in effect advertises `h3` on a QUIC port of the server (or on a port in a
  variable) and `http3 off` is in effect: in the socket's default server the QUIC handshake
  fails for every name (warning at that `http3 off`); in a name-based server nginx answers its
  HTTP/3 requests with 421 (warning at its `http3 off`);
- when an `Alt-Svc` header advertises `h3` on a port of this host (`h3=":PORT"`) where no
  `listen ... quic` of the configuration is, in a server with QUIC or a TCP-only one: warning
  at that `add_header`. An alternative with another host (`h3="cdn.example.net:443"`) or a
  port in a variable is not judged.

## Why it matters
nginx sends no `Alt-Svc` of its own (docs/nginx-facts.md#quic): without the header on the TCP
responses, browsers never learn that HTTP/3 is there and never use the QUIC listener, however
well it is configured. An `Alt-Svc` naming a port with no QUIC listener sends every browser
that cached it to a UDP port that does not answer: each new connection first waits for the
QUIC attempt to fail, then falls back to TCP. The same holds for a QUIC socket whose
`http3 off` refuses the handshake (no application protocol), and a name-based server with
`http3 off` answers every HTTP/3 request with 421 Misdirected Request. A location that drops
the header, or an error answer without `always`, sends no advertisement at all.

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
add_header inheritance: ngx_http_headers_module, measured by tests/integration/test_hsts_nginx.cpp;
for Alt-Svc itself, `always`, and `http3 off` under an advertised h3 (handshake refused with
CRYPTO_ERROR 0x178 on the default server, 421 on a name-based one): docs/nginx-facts.md#quic,
measured on 1.26.3 and 1.30.6 by tests/integration/test_quic_nginx.cpp.
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

/// The status codes to which nginx adds a header given without `always`
/// (ngx_http_headers_filter; measured by tests/integration/test_quic_nginx.cpp).
bool header_without_always_sent(int status) {
  for (int s : {200, 201, 204, 206, 301, 302, 303, 304, 307, 308})
    if (s == status) return true;
  return false;
}

/// The status of the `return` directly in `block` (every request reaching that level ends
/// there: `return URL` is 302), or nullopt when it has none or a status in a variable.
std::optional<std::pair<int, const config::directive*>> own_return(
    config::list<config::directive> block) {
  for (const auto& d : block) {
    if (d.has_block || d.name != "return" || d.args.empty()) continue;
    const std::string_view code = d.args[0].value();
    if (!code.empty() &&
        std::all_of(code.begin(), code.end(), [](unsigned char c) { return std::isdigit(c); })) {
      if (code.size() > 3) return std::nullopt;
      return std::pair{std::stoi(std::string(code)), &d};
    }
    if (code.find('$') == std::string_view::npos) return std::pair{302, &d};
    return std::nullopt;
  }
  return std::nullopt;
}

/// True for the server level and `location /` / `location = /`: where a browser's first
/// request lands. Alt-Svc holds for the whole origin, so a level that does not send it matters
/// most there; elsewhere a browser that reaches another page learns it.
bool landing_level(const header_level& here, const model::server& s) {
  const config::directive* b = here.block;
  if (b == s.where) return true;
  return b && b->name == "location" &&
         ((b->args.size() == 1 && b->args[0].value() == "/") ||
          (b->args.size() == 2 && b->args[0].value() == "=" && b->args[1].value() == "/"));
}

/// A level whose own add_header list loses the inherited Alt-Svc.
struct alt_svc_drop {
  header_drop drop;
  std::string where;     ///< level_label()
  bool landing = false;  ///< landing_level()
};

/// Alt-Svc without `always` in a level that answers every request with a status nginx adds no
/// such header to.
struct alt_svc_unsent {
  const config::directive* header = nullptr;  ///< the add_header Alt-Svc
  const config::directive* ret = nullptr;     ///< the `return`
  bool landing = false;                       ///< landing_level()
};

/// What the levels of one server do with Alt-Svc.
struct alt_svc_levels {
  bool advertised = false;  ///< some level's responses carry it (or more_set_headers names it)
  bool more_set = false;    ///< a more_set_headers names it (its merging is not modelled)
  const config::directive* first = nullptr;  ///< the first Alt-Svc add_header in effect
  std::set<int> h3_ports;                    ///< ports its h3 alternatives name (-1: a variable)
  std::set<const config::directive*> wrong_port;
  std::vector<alt_svc_drop> drops;
  std::vector<alt_svc_unsent> never_sent;
};

alt_svc_levels read_levels(const engine::context& ctx, const model::server& s,
                           const std::set<int>& quic_ports) {
  alt_svc_levels out;
  std::set<const config::directive*> told;
  visit_header_levels(ctx, s, [&](const header_level& here, const header_level& parent) {
    for (const auto* d : here.more_set) out.more_set = out.more_set || more_set_alt_svc(*d);
    if (auto drop = header_dropped(here, parent, "Alt-Svc"))
      out.drops.push_back({*drop, level_label(here, s), landing_level(here, s)});
    const auto ret =
        here.block && here.block->name != "if" ? own_return(here.block->block) : std::nullopt;
    for (const auto* d : here.headers) {
      if (!adds_header(*d, "Alt-Svc")) continue;
      out.advertised = true;
      if (!out.first) out.first = d;
      for (int p : h3_ports(d->args[1].value())) {
        out.h3_ports.insert(p);
        if (p > 0 && !quic_ports.count(p)) out.wrong_port.insert(d);
      }
      const bool always = d->args.size() >= 3 && d->args[2].value() == "always";
      if (!always && ret && !header_without_always_sent(ret->first) &&
          told.insert(ret->second).second)
        out.never_sent.push_back({d, ret->second, landing_level(here, s)});
    }
  });
  out.advertised = out.advertised || out.more_set;
  return out;
}

/// The `http3 off` in effect in `s`, or null (http3 is on by default).
const config::directive* http3_off(const model::server& s) {
  const auto* h = s.get("http3");
  return h && h->where() && h->first() == "off" ? h->where() : nullptr;
}

/// `http3 off` where the Alt-Svc of `s` sends browsers to HTTP/3: on the default server of a
/// QUIC socket the handshake fails for every name (no application protocol), on a name-based
/// server its requests are answered 421 (measured on 1.26.3 and 1.30.6).
void check_http3_off(const engine::context& ctx, const model::server& s,
                     const std::vector<const model::listen_socket*>& quic,
                     const alt_svc_levels& alt, std::set<const config::directive*>& told,
                     engine::finding_list& out) {
  const auto& m = ctx.model();
  const std::string alt_at = to_string(ctx.where(alt.first));
  for (const auto* k : quic) {
    if (!alt.h3_ports.count(k->port) && !alt.h3_ports.count(-1)) continue;
    const model::server& d = m.servers[k->default_server];
    const config::directive* off = http3_off(d);
    const bool handshake = off != nullptr;
    if (!off) off = http3_off(s);
    if (!off || !told.insert(off).second) continue;
    auto f = ctx.make(
        id, engine::severity::warning,
        handshake
            ? "http3 off in " + server_label(ctx, d) + ", the default server of QUIC " + k->name() +
                  ": the QUIC handshake there fails for every name (no application "
                  "protocol: CONNECTION_CLOSE with CRYPTO_ERROR 0x178), though the Alt-Svc "
                  "at " +
                  alt_at + " sends browsers to HTTP/3 on it"
            : "http3 off in " + server_label(ctx, s) +
                  ": nginx answers its HTTP/3 "
                  "requests on QUIC " +
                  k->name() + " with 421 Misdirected Request, though the Alt-Svc at " + alt_at +
                  " sends browsers there",
        off);
    f.facts.push_back(setting_evidence(ctx, handshake ? d : s, "http3"));
    f.facts.push_back(
        {"add_header Alt-Svc", std::string(alt.first->args[1].value()), "", ctx.where(alt.first)});
    f.fix = "http3 on;  # or take h3 out of the Alt-Svc header";
    f.server = server_label(ctx, handshake ? d : s);
    f.ports.push_back(k->port);
    out.push_back(std::move(f));
  }
}

void report_wrong_ports(const engine::context& ctx, const model::server& s,
                        const alt_svc_levels& alt, const std::set<int>& quic_ports,
                        const std::vector<const model::listen_socket*>& quic,
                        engine::finding_list& out) {
  for (const auto* d : alt.wrong_port) {
    std::string ports;
    for (int p : h3_ports(d->args[1].value()))
      if (p > 0 && !quic_ports.count(p)) ports += (ports.empty() ? "" : ", ") + std::to_string(p);
    auto f = ctx.make(id, engine::severity::warning,
                      "Alt-Svc advertises HTTP/3 on port " + ports +
                          ", where nothing listens with quic: browsers that cached it try a "
                          "UDP port that does not answer before falling back to TCP",
                      d);
    f.facts.push_back({"add_header Alt-Svc", std::string(d->args[1].value()), "", std::nullopt});
    f.fix = quic.empty() ? "listen " + ports + " quic;  # or remove the Alt-Svc header"
                         : "add_header Alt-Svc 'h3=\":" + std::to_string(quic.front()->port) +
                               "\"; ma=86400' always;";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

void report_drops(const engine::context& ctx, const model::server& s, const alt_svc_levels& alt,
                  engine::finding_list& out) {
  for (const auto& d : alt.drops) {
    const std::string value = add_header_text(*d.drop.inherited);
    auto f = ctx.make(
        id, d.landing ? engine::severity::warning : engine::severity::note,
        (d.drop.by_inherit_off
             ? "add_header_inherit off in " + d.where + " drops"
             : "add_header in " + d.where + " replaces the inherited add_header list, dropping") +
            " Alt-Svc (set at " + to_string(ctx.where(d.drop.inherited)) +
            "): its responses do not advertise HTTP/3" +
            (d.landing ? "" : " (a browser that reaches another page of the site learns it there)"),
        d.drop.at);
    f.facts.push_back(
        {"inherited add_header", value, "enclosing level", ctx.where(d.drop.inherited)});
    f.fix = "add_header " + value + ";  # repeat it in " + d.where;
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

void report_never_sent(const engine::context& ctx, const model::server& s,
                       const alt_svc_levels& alt, engine::finding_list& out) {
  for (const auto& [header, ret, landing] : alt.never_sent) {
    auto f = ctx.make(
        id, landing ? engine::severity::warning : engine::severity::note,
        "Alt-Svc without always (set at " + to_string(ctx.where(header)) +
            ") is not sent with the " + std::string(ret->args[0].value()) +
            " that every request here gets: nginx adds such a header only to 200, 201, 204, 206, "
            "301, 302, 303, 304, 307 and 308 responses" +
            (landing ? "" : " (a browser that reaches another page of the site learns it there)"),
        ret);
    f.facts.push_back(
        {"add_header Alt-Svc", std::string(header->args[1].value()), "", ctx.where(header)});
    f.fix = "add_header " + add_header_text(*header) + " always;";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (m.versions.nginx < model::version{1, 25, 0}) return;  // no QUIC: directive-arguments
  std::set<int> quic_ports;                                 // every QUIC port of the configuration
  for (const auto& k : m.sockets)
    if (k.quic && k.context == model::context_kind::http) quic_ports.insert(k.port);
  std::set<const config::directive*> seen, http3_told;
  for (const auto& s : m.servers) {
    if (s.context != model::context_kind::http || !s.where || !model::has_tcp_tls(s)) continue;
    if (!seen.insert(s.where).second) continue;
    const auto quic = model::quic_sockets_of(m, s);
    const alt_svc_levels alt = read_levels(ctx, s, quic_ports);
    // A TCP-only server is judged on the ports its Alt-Svc names alone.
    report_wrong_ports(ctx, s, alt, quic_ports, quic, out);
    if (quic.empty()) continue;
    if (alt.first) check_http3_off(ctx, s, quic, alt, http3_told, out);
    if (!alt.more_set) report_drops(ctx, s, alt, out);
    report_never_sent(ctx, s, alt, out);
    if (alt.advertised || (!alt.drops.empty() && !alt.more_set)) continue;
    const std::string label = server_label(ctx, s);
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
                 "QUIC listener that no Alt-Svc header advertises (or a block drops it), or "
                 "Alt-Svc naming a port without QUIC or one with http3 off",
                 doc, check};
  r.confirmed_by = engine::probe_question::none;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
