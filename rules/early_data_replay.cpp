// early-data-replay: ssl_early_data on, with no $ssl_early_data passed to the application.

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "early-data-replay";

constexpr const char* doc = R"(# early-data-replay

## What it flags
A server with TLS 1.3 and `ssl_early_data on` in which no directive passes `$ssl_early_data`
on (e.g. `proxy_set_header Early-Data $ssl_early_data;`, a `fastcgi_param`, `grpc_set_header`
or `uwsgi_param`, in the server, its locations or the `http` block), or checks it. A variable that a `map` or `set` derives from `$ssl_early_data` (keyed on it,
or returning it), at any depth, counts as the variable itself: `if ($too_early) { return 425; }`
or `proxy_set_header Early-Data $early;` in the server, its locations or the `http` block
handles early data, and there is no warning: a note at `ssl_early_data` names the directive
that handles it (its file and line, also in the evidence), and says whether nginx refuses early
requests itself (an `if` whose block returns 425) or leaves the refusal to the application (a
header or param). A `map` alone handles nothing. Warning. In a `stream` server: a note (there
is no request to mark).

## Why it matters
0-RTT data can be replayed: an attacker who recorded a client's first flight sends it again
and nginx accepts the same early data each time (3 of 3 replays here; nginx has no
anti-replay). A replayed POST runs twice. RFC 8470 lets the application refuse with 425 Too
Early, but only if it knows which requests came as early data: nginx tells it through
`$ssl_early_data`.

## Example
```nginx
server {
    listen 443 ssl;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_early_data on;
    location / { proxy_pass http://app; }
}
```

## Fix
```nginx
proxy_set_header Early-Data $ssl_early_data;   # the app answers 425 to non-idempotent early requests
```
or turn 0-RTT off: `ssl_early_data off;`.

## How the prober confirms it
`ngxtls probe --early-data` sends `HEAD /` as 0-RTT early data with a fresh ticket, then the same
ticket and early data again, and from two connections at once, and reports whether the server
accepted each and what it answered; `ngxtls check --sandbox` does this and judges the finding.

## Source
docs/nginx-facts.md#early-data-replay (nginx 1.22.1, 1.26.3, 1.30.6: the same ticket's early
data accepted again, also from two connections at once and with tickets off and a shared cache); RFC 8470 (Early-Data header, 425 Too Early); nginx docs ngx_http_ssl_module
`ssl_early_data`.
)";

// True when `text` refers to variable `var` (given without `$`): `$var` or `${var}`, and not
// the start of a longer name (`$var_x`).
bool refers_to(std::string_view text, const std::string& var) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t p = text.find('$'); p != std::string_view::npos; p = text.find('$', p + 1)) {
    std::string_view rest = text.substr(p + 1);
    if (rest.rfind("{" + var + "}", 0) == 0) return true;
    if (rest.rfind(var, 0) == 0 && (rest.size() == var.size() || !word(rest[var.size()])))
      return true;
  }
  return false;
}

// The variables that carry $ssl_early_data: itself, and every variable a `map` or `set`
// derives from one of them (a map keyed on it, or one that returns it as a value), to any
// depth. nginx evaluates these per request, so checking any of them checks early data.
std::vector<std::string> early_data_variables(const config::config& cfg) {
  std::vector<std::string> vars{"ssl_early_data"};
  auto carries = [&](std::string_view text) {
    for (const auto& v : vars)
      if (refers_to(text, v)) return true;
    return false;
  };
  auto add = [&](std::string_view target) {
    if (target.size() < 2 || target[0] != '$') return false;
    std::string name(target.substr(1));
    if (!name.empty() && name.front() == '{' && name.back() == '}')
      name = name.substr(1, name.size() - 2);
    if (std::find(vars.begin(), vars.end(), name) != vars.end()) return false;
    vars.push_back(std::move(name));
    return true;
  };
  std::vector<const config::directive*> assigners;
  walk(cfg.root, [&](const config::directive& d) {
    const std::string_view name = d.name.view();
    if ((name == "map" && d.has_block && d.args.size() == 2) ||
        (name == "set" && d.args.size() == 2))
      assigners.push_back(&d);
  });
  // Each round adds at least one variable, from at most one per assigner.
  for (std::size_t round = 0; round <= assigners.size(); ++round) {
    bool grew = false;
    for (const auto* d : assigners) {
      if (d->name.view() == "set") {
        if (carries(d->args[1].value())) grew = add(d->args[0].value()) || grew;
        continue;
      }
      bool from = carries(d->args[0].value());
      for (const auto& entry : d->block)
        for (const auto& a : entry.args) from = from || carries(a.value());
      if (from) grew = add(d->args[1].value()) || grew;
    }
    if (!grew) break;
  }
  return vars;
}

// The first directive in `block` (at any depth, maps excepted: a map only defines a variable)
// that uses one of `vars`: it passes early data on (a header, a param) or acts on it (`if`
// returning 425).
const config::directive* handler_in(config::list<config::directive> block,
                                    const std::vector<std::string>& vars, bool nested) {
  const config::directive* found = nullptr;
  auto uses = [&](const config::directive& d) {
    if (d.name.view() == "map") return false;
    for (const auto& a : d.args)
      for (const auto& v : vars)
        if (refers_to(a.value(), v)) return true;
    return false;
  };
  if (nested) {
    walk(block, [&](const config::directive& d) {
      if (!found && uses(d)) found = &d;
    });
  } else {
    for (const auto& d : block)
      if (!found && !d.has_block && uses(d)) found = &d;
  }
  return found;
}

// True when `d` is an `if` whose block answers 425 Too Early: nginx itself refuses the request.
bool refuses_early(const config::directive& d) {
  if (d.name.view() != "if" || !d.has_block) return false;
  for (const auto& c : d.block)
    if (c.name.view() == "return" && !c.args.empty() && c.args[0].value() == "425") return true;
  return false;
}

// `d` as written, on one line: "proxy_set_header Early-Data $ssl_early_data".
std::string one_line(const config::directive& d) {
  std::string text(d.name.view());
  for (const auto& a : d.args) text += " " + std::string(a.value());
  return text;
}

// The note that says which directive handles early data in server `s`.
engine::finding handled_note(const engine::context& ctx, const model::server& s,
                             const config::directive& handler) {
  const std::string where = to_string(ctx.where(&handler));
  auto f = ctx.make(
      id, engine::severity::note,
      refuses_early(handler)
          ? "ssl_early_data on: handled at " + where + " by `" + one_line(handler) +
                " { return 425; }`: nginx answers 425 Too Early itself"
          : "ssl_early_data on: handled at " + where + " by `" + one_line(handler) +
                "`, which passes the early-data mark on: the application must answer 425 Too "
                "Early to requests it cannot run twice",
      anchor_of(s, "ssl_early_data"));
  f.facts.push_back(setting_evidence(ctx, s, "ssl_early_data"));
  f.facts.push_back({"handled by", one_line(handler),
                     refuses_early(handler) ? "nginx (425)" : "application", ctx.where(&handler)});
  f.server = server_label(ctx, s);
  // The sandbox answers with its own response, not the handler's, and the probe sends early
  // data only to the sandbox: no probe can see the handler at work.
  f.question = engine::probe_question::none;
  return f;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  std::set<const config::directive*> seen_servers;
  std::optional<std::vector<std::string>> vars;  // worked out for the first server with 0-RTT
  for (const auto& s : m.servers) {
    if (!s.has_ssl || !model::is_on(s.get("ssl_early_data")) || !tls13_enabled(m, s)) continue;
    if (!seen_servers.insert(s.where).second) continue;
    const bool stream = s.context == model::context_kind::stream;
    if (!stream) {
      if (!vars) vars = early_data_variables(*m.cfg);
      const auto* http = enclosing_block(m, s);
      const config::directive* handler = handler_in(s.where->block, *vars, true);
      if (!handler && http) handler = handler_in(http->block, *vars, false);
      if (handler) {
        out.push_back(handled_note(ctx, s, *handler));
        continue;
      }
    }
    auto f = ctx.make(
        id, stream ? engine::severity::note : engine::severity::warning,
        stream ? "ssl_early_data on in a stream server: 0-RTT data can be replayed and the "
                 "proxied service cannot tell early data apart"
               : "ssl_early_data on but $ssl_early_data is never passed to the application: "
                 "replayed 0-RTT requests run again and the backend cannot answer "
                 "425 Too Early",
        anchor_of(s, "ssl_early_data"));
    f.facts.push_back(setting_evidence(ctx, s, "ssl_early_data"));
    f.facts.push_back(setting_evidence(ctx, s, "ssl_protocols"));
    f.fix = stream ? "ssl_early_data off;" : "proxy_set_header Early-Data $ssl_early_data;";
    f.server = server_label(ctx, s);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule early_data_replay() {
  engine::rule r{id, engine::severity::warning,
                 "0-RTT on without passing $ssl_early_data upstream: replayed requests run again",
                 doc, check};
  r.confirmed_by = engine::probe_question::early_data_replayed;
  return r;
}

}  // namespace ngxtls::rules
