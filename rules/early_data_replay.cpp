// early-data-replay: ssl_early_data on, with locations that hand requests to an application
// without $ssl_early_data.

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "early-data-replay";

constexpr const char* doc = R"(# early-data-replay

## What it flags
An http server with TLS 1.3 and `ssl_early_data on` (set in the server or inherited from
`http`) in which some location hands requests to an application without telling it which came
as early data. Each location (nested ones, named ones, and the `if` and `limit_except` blocks in
them) that has a content handler of its own is judged on its own:
- `proxy_pass`, `fastcgi_pass`, `uwsgi_pass`, `scgi_pass`, `grpc_pass`: handled when the header
  or param list in effect there (`proxy_set_header`, `fastcgi_param`, `uwsgi_param`,
  `scgi_param`, `grpc_set_header`: the one that matches the handler) passes `$ssl_early_data`.
  nginx takes that list from the enclosing level (location, server, `http`) only when a level
  sets none of its own: one `proxy_set_header Host $host;` in a location drops the server's
  `Early-Data` header there, and `include fastcgi_params;` in a PHP location drops a
  server-level `fastcgi_param HTTP_EARLY_DATA`. An include whose file is not there (a site
  file linted without its nginx.conf) and whose name is that of the module (`fastcgi_params`,
  `fastcgi.conf`, `snippets/fastcgi-php.conf`, `uwsgi_params`, `scgi_params`, `proxy_params`)
  counts as such a list without the mark: the stock files pass none. A `proxy_set_header` does
  nothing for a `fastcgi_pass`, and `add_header` sets a header of the response to the client:
  the backend never sees it.
- code run by nginx (`content_by_lua*`, `js_content`, `perl`): handled when the code, as the
  config holds it, names `ssl_early_data`.
- any of them: handled when an `if` on early data whose block returns (`if ($ssl_early_data) {
  return 425; }`) sits in the location itself, or in the server block, whose `if`s run before a
  location is chosen. A location's `if` does not cover a location nested in it: nginx runs the
  rewrite directives of the location a request ends in only.

A variable that a `map` or `set` derives from `$ssl_early_data` (keyed on it, or returning it),
at any depth, counts as the variable itself (`if ($too_early) { return 425; }`,
`proxy_set_header Early-Data $early;`). A `map` alone handles nothing.

The warning names every location left unhandled (with its line and handler, and the inherited
early-data line its own list replaced), and the fix gives the line that fits each handler.
Where every such location is handled, a note at `ssl_early_data` names the directives that
handle it and says whether nginx refuses early requests itself (an `if` that returns) or leaves
the refusal to the application (a header or param). A server in which no location hands
requests on (static files, `try_files`, `return`, or a location that returns before its
handler) gets a note: the static file module answers GET and HEAD only, and a replayed read or
fixed answer runs nothing twice. In a `stream` server: a note (there is no request to mark).

## Why it matters
0-RTT data can be replayed: an attacker who recorded a client's first flight sends it again
and nginx accepts the same early data each time (3 of 3 replays here; nginx has no
anti-replay). A replayed POST runs twice. RFC 8470 lets the application refuse with 425 Too
Early, but only if it knows which requests came as early data: nginx tells it through
`$ssl_early_data`, which is "1" while the handshake is unfinished (a replay never finishes it).

## Example
```nginx
server {
    listen 443 ssl;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_early_data on;
    proxy_set_header Early-Data $ssl_early_data;
    location / { proxy_pass http://app; }
    location ~ \.php$ { include fastcgi_params; fastcgi_pass unix:/run/php/fpm.sock; }
}
```
Here `location /` is handled and `location ~ \.php$` is not.

## Fix
```nginx
fastcgi_param HTTP_EARLY_DATA $ssl_early_data;  # in the PHP location, after its include
proxy_set_header Early-Data $ssl_early_data;     # in each proxy_pass location with a list of its own
```
and have the application answer 425 to early requests it cannot run twice; or refuse them in
nginx (`if ($ssl_early_data) { return 425; }`, or a map keyed on `$ssl_early_data$request_method`),
or turn 0-RTT off: `ssl_early_data off;`.

## How the prober confirms it
`ngxtls probe --early-data` sends `HEAD /` as 0-RTT early data with a fresh ticket, then the same
ticket and early data again, and from two connections at once, and reports whether the server
accepted each and what it answered; `ngxtls check --sandbox` does this and judges the finding.
The sandbox answers from its own `location /`, so what it confirms is that nginx accepts the
replayed early data on the server's socket; which locations pass the mark on is read from the
configuration, not seen by the probe.

## Source
docs/nginx-facts.md#early-data-replay (nginx 1.22.1, 1.26.3, 1.30.6: the same ticket's early
data accepted again, also from two connections at once and with tickets off and a shared cache;
what reaches a backend, measured by tests/integration/test_nginx_versions.cpp "early data
upstream: a location's own proxy_set_header or fastcgi_param list drops the server's early-data
line and add_header never reaches the backend": a location's own `proxy_set_header` or
`fastcgi_param` list drops the server's early-data line, a nested location without one
inherits it, `proxy_set_header` does nothing for a `fastcgi_pass`, `add_header` never reaches
the backend, a location's `if` on a map of `$ssl_early_data` answers its own early requests 425
and not those of a location nested in it, a server-level one answers every location's); nginx's
source for the same list rule in uwsgi_param, scgi_param and grpc_set_header (their
merge_loc_conf: `params_source` / `headers_source` taken from the parent only when unset);
RFC 8470 (Early-Data header, 425 Too Early); nginx docs ngx_http_ssl_module `ssl_early_data`.
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

// True when an argument of `d` refers to one of `vars`.
bool uses_early(const config::directive& d, const std::vector<std::string>& vars) {
  for (const auto& a : d.args)
    for (const auto& v : vars)
      if (refers_to(a.value(), v)) return true;
  return false;
}

// A content handler that hands the request to an application over a protocol, and the
// directive that gives that application request headers or params: nginx's array of them is
// taken from the enclosing level only when a level defines none of its own
// (ngx_http_proxy_merge_loc_conf and its fastcgi/uwsgi/scgi/grpc twins).
struct upstream_kind {
  std::string_view pass;   ///< "fastcgi_pass"
  std::string_view param;  ///< "fastcgi_param"
  std::string_view fix;    ///< the line that passes the early-data mark on
};
constexpr std::array<upstream_kind, 5> k_upstreams{{
    {"proxy_pass", "proxy_set_header", "proxy_set_header Early-Data $ssl_early_data;"},
    {"fastcgi_pass", "fastcgi_param", "fastcgi_param HTTP_EARLY_DATA $ssl_early_data;"},
    {"uwsgi_pass", "uwsgi_param", "uwsgi_param HTTP_EARLY_DATA $ssl_early_data;"},
    {"scgi_pass", "scgi_param", "scgi_param HTTP_EARLY_DATA $ssl_early_data;"},
    {"grpc_pass", "grpc_set_header", "grpc_set_header Early-Data $ssl_early_data;"},
}};
constexpr std::size_t k_code = k_upstreams.size();  ///< the kind of code run inside nginx

// Content handlers that run code inside nginx: the code itself must read $ssl_early_data.
bool runs_code(std::string_view name) {
  return name == "content_by_lua" || name == "content_by_lua_block" ||
         name == "content_by_lua_file" || name == "js_content" || name == "perl";
}

// The `include` directives whose files were not read (a site file linted without its conf
// prefix: config::missing_includes), by the block that holds them directly (file index and
// byte offset, as the expanded tree's copy of that block has them). Built once per run.
using unread_index =
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<const config::directive*>>;

unread_index unread_includes(const config::config& cfg) {
  unread_index out;
  if (cfg.missing_includes.empty()) return out;
  std::set<std::tuple<std::string, std::uint32_t, std::uint32_t>> missing;
  for (const auto& m : cfg.missing_includes)
    missing.emplace(m.include.file, m.include.line, m.include.column);
  for (const auto& file : cfg.files)
    walk(file.parsed, [&](const config::directive& block) {
      if (!block.has_block) return;
      for (const auto& d : block.block) {
        if (d.has_block || d.name.view() != "include") continue;
        const source_location at = cfg.where(d);
        if (missing.count({at.file, at.line, at.column}))
          out[{block.file, block.offset}].push_back(&d);
      }
    });
  return out;
}

// The unread includes directly in `block` (a directive of the expanded tree).
const std::vector<const config::directive*>& unread_in(const unread_index& index,
                                                       const config::directive& block) {
  static const std::vector<const config::directive*> none;
  const auto it = index.find({block.file, block.offset});
  return it == index.end() ? none : it->second;
}

// True when an unread `include` most likely sets a list of kind `k`: nginx's and Debian's
// stock files (fastcgi_params, fastcgi.conf, snippets/fastcgi-php.conf, uwsgi_params,
// scgi_params, proxy_params) are named after their module, and none passes $ssl_early_data.
bool sets_list(const config::directive& include, std::size_t k) {
  if (include.args.empty()) return false;
  const std::string_view path = include.args[0].value();
  const std::string_view param = k_upstreams[k].param;
  const std::string_view module = param.substr(0, param.find('_'));
  return path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1)
             .find(module) != std::string_view::npos;
}

// The header/param arrays in effect at one level (http, server, location, `if`, limit_except),
// per upstream kind.
struct param_arrays {
  /// The directive of the array in effect that carries early data, or null.
  std::array<const config::directive*, k_upstreams.size()> early{};
  /// An enclosing level's early-data directive that this level's own array replaced, or null.
  std::array<const config::directive*, k_upstreams.size()> dropped{};
  /// The first directive of the list in effect, or null when no level has one.
  std::array<const config::directive*, k_upstreams.size()> list{};
};

param_arrays arrays_at(const param_arrays& parent, config::list<config::directive> children,
                       const std::vector<std::string>& vars,
                       const std::vector<const config::directive*>& unread = {}) {
  param_arrays here = parent;
  for (std::size_t k = 0; k < k_upstreams.size(); ++k) {
    const config::directive* first = nullptr;
    const config::directive* early = nullptr;
    for (const auto& d : children) {
      if (d.has_block || d.name.view() != k_upstreams[k].param) continue;
      if (!first) first = &d;
      if (!early && uses_early(d, vars)) early = &d;
    }
    // An unread include named after the module sets this level's list: counted as one
    // without the early-data mark (the stock files have none).
    for (const auto* inc : unread)
      if (!first && sets_list(*inc, k)) first = inc;
    if (!first) continue;
    here.early[k] = early;
    here.list[k] = first;
    here.dropped[k] = early ? nullptr : (parent.early[k] ? parent.early[k] : parent.dropped[k]);
  }
  return here;
}

// The `return` inside `d` when `d` is an `if` on early data whose block returns: nginx answers
// the request itself and no application runs it.
const config::directive* refusal_return(const config::directive& d,
                                        const std::vector<std::string>& vars) {
  if (d.name.view() != "if" || !d.has_block || !uses_early(d, vars)) return nullptr;
  for (const auto& c : d.block)
    if (c.name.view() == "return" && !c.args.empty()) return &c;
  return nullptr;
}

// The first `if` among `children` that refuses early data (refusal_return), or null.
const config::directive* refusal_in(config::list<config::directive> children,
                                    const std::vector<std::string>& vars) {
  for (const auto& d : children)
    if (refusal_return(d, vars)) return &d;
  return nullptr;
}

// One place that hands requests to an application: a location (or an `if` or limit_except in
// one) with a content handler of its own.
struct app_site {
  const config::directive* block = nullptr;       ///< the location, `if` or limit_except
  const config::directive* location = nullptr;    ///< the location it is in (itself for one)
  const config::directive* handler = nullptr;     ///< proxy_pass, fastcgi_pass, content_by_lua...
  std::size_t kind = 0;                           ///< index into k_upstreams, or k_code
  const config::directive* handled_by = nullptr;  ///< the refusing `if` or the passing directive
  const config::directive* dropped = nullptr;     ///< see param_arrays::dropped
  const config::directive* list = nullptr;        ///< see param_arrays::list
};

// The content handler among `children` (not in nested blocks), and its kind.
std::pair<const config::directive*, std::size_t> handler_of(
    config::list<config::directive> children) {
  for (const auto& d : children) {
    if (d.has_block) continue;
    // An unconditional return answers before the content phase: nothing is handed on.
    if (d.name.view() == "return") return {nullptr, 0};
  }
  for (const auto& d : children) {
    if (d.has_block) continue;
    for (std::size_t k = 0; k < k_upstreams.size(); ++k)
      if (d.name.view() == k_upstreams[k].pass) return {&d, k};
    if (runs_code(d.name.view())) return {&d, k_code};
  }
  return {nullptr, 0};
}

// True when the code a directive runs (its arguments, or an inline Lua body) names
// ssl_early_data.
bool code_reads_early(const config::directive& d) {
  for (const auto& a : d.args)
    if (a.value().find("ssl_early_data") != std::string_view::npos) return true;
  const auto body = d.lua_body();
  return body && body->find("ssl_early_data") != std::string_view::npos;
}

// Every app_site of a server, depth first: locations, nested locations, and the `if` and
// limit_except blocks in them. A location's `if` that refuses early data covers that
// location's own requests (and its `if` blocks), not its nested locations: nginx runs the
// rewrite directives of the location a request ends in only.
void collect_sites(const unread_index& unread, const param_arrays& parent,
                   config::list<config::directive> children, const config::directive* location,
                   const config::directive* refusal, const std::vector<std::string>& vars,
                   std::vector<app_site>& out) {
  for (const auto& d : children) {
    if (!d.has_block) continue;
    const std::string_view name = d.name.view();
    const bool is_location = name == "location";
    if (!is_location && (location == nullptr || (name != "if" && name != "limit_except"))) continue;
    const param_arrays here = arrays_at(parent, d.block, vars, unread_in(unread, d));
    const config::directive* loc = is_location ? &d : location;
    const config::directive* refused = is_location ? refusal_in(d.block, vars) : refusal;
    if (auto [handler, kind] = handler_of(d.block); handler) {
      app_site site{&d, loc, handler, kind, refused, nullptr};
      if (!site.handled_by && kind < k_upstreams.size()) {
        site.handled_by = here.early[kind];
        site.dropped = here.dropped[kind];
        site.list = here.list[kind];
      }
      if (!site.handled_by && kind == k_code && code_reads_early(*handler))
        site.handled_by = handler;
      out.push_back(site);
    }
    collect_sites(unread, here, d.block, loc, refused, vars, out);
  }
}

// `d` as written, on one line: "proxy_set_header Early-Data $ssl_early_data".
std::string one_line(const config::directive& d) {
  std::string text(d.name.view());
  for (const auto& a : d.args) text += " " + std::string(a.value());
  return text;
}

// Where a directive is, for a message about a finding in `file`: "line 14" in that file, else
// "site.conf:14".
std::string line_of(const engine::context& ctx, const config::directive& d,
                    const std::string& file) {
  source_location w = ctx.where(&d);
  if (w.file == file) return "line " + std::to_string(w.line);
  w.column = 0;
  return to_string(w);
}

// How a message names a site: "location ~ \.php$", or "if ($x) in location /".
std::string site_name(const app_site& s) {
  if (s.block == s.location) return one_line(*s.location);
  return one_line(*s.block) + " in " + one_line(*s.location);
}

// How the note names what handles early data: "`proxy_set_header Early-Data $x`", or the
// refusing `if` with its return.
std::string handler_text(const config::directive& d, const std::vector<std::string>& vars) {
  if (const auto* r = refusal_return(d, vars))
    return "`" + one_line(d) + " { " + one_line(*r) + "; }`";
  return "`" + one_line(d) + "`";
}

// The note that says which directives handle early data in server `s`: each refusing `if`
// or directive that passes the mark on, once, in config order.
engine::finding handled_note(const engine::context& ctx, const model::server& s,
                             const std::vector<const config::directive*>& handlers,
                             const std::vector<std::string>& vars) {
  bool refuse = false, pass = false;
  std::vector<std::string> codes;  // the statuses the refusing `if`s answer, once each
  const std::string file = ctx.where(anchor_of(s, "ssl_early_data")).file;
  std::string text = "ssl_early_data on: handled";
  for (std::size_t i = 0; i < handlers.size(); ++i) {
    const auto* r = refusal_return(*handlers[i], vars);
    (r ? refuse : pass) = true;
    if (r && std::find(codes.begin(), codes.end(), r->args[0].value()) == codes.end())
      codes.emplace_back(r->args[0].value());
    text += std::string(i == 0 ? "" : " and") + " at " + line_of(ctx, *handlers[i], file) + " by " +
            handler_text(*handlers[i], vars);
  }
  std::string answers;
  for (const auto& c : codes) answers += (answers.empty() ? "" : " or ") + c;
  const bool too_early = std::find(codes.begin(), codes.end(), "425") != codes.end();
  const std::string refusal_tail =
      answers == "425" ? "nginx answers 425 Too Early itself"
                       : "nginx answers " + answers + " itself" +
                             (too_early ? ""
                                        : " (a client retries after the handshake only on 425 "
                                          "Too Early, RFC 8470)");
  if (refuse && !pass)
    text += ": " + refusal_tail;
  else if (pass && !refuse)
    text += std::string(handlers.size() == 1 ? ", which passes" : ", which pass") +
            " the early-data mark on: the application must answer 425 Too Early to requests it "
            "cannot run twice";
  else
    text += ": where an `if` refuses early data, " + refusal_tail +
            "; elsewhere the application must answer 425 Too Early to requests it cannot run "
            "twice";
  auto f = ctx.make(id, engine::severity::note, text, anchor_of(s, "ssl_early_data"));
  f.facts.push_back(setting_evidence(ctx, s, "ssl_early_data"));
  for (const auto* h : handlers)
    f.facts.push_back(
        {"handled by", one_line(*h),
         refusal_return(*h, vars)
             ? "nginx (" + std::string(refusal_return(*h, vars)->args[0].value()) + ")"
             : "application",
         ctx.where(h)});
  f.server = server_label(ctx, s);
  // The sandbox answers with its own response, not the handler's, and the probe sends early
  // data only to the sandbox: no probe can see the handler at work.
  f.question = engine::probe_question::none;
  return f;
}

// The note of a server where no location hands requests to an application.
engine::finding static_note(const engine::context& ctx, const model::server& s) {
  auto f = ctx.make(id, engine::severity::note,
                    "ssl_early_data on, and no location of this server hands requests to an "
                    "application (only static files and `return`): a replayed 0-RTT request is "
                    "answered again but runs nothing; pass $ssl_early_data on in any location "
                    "that gets a proxy_pass, fastcgi_pass or the like",
                    anchor_of(s, "ssl_early_data"));
  f.facts.push_back(setting_evidence(ctx, s, "ssl_early_data"));
  f.server = server_label(ctx, s);
  f.question = engine::probe_question::none;
  return f;
}

// The warning of a server whose `unhandled` sites hand early requests to an application that
// is not told they are early.
engine::finding unhandled_warning(const engine::context& ctx, const model::server& s,
                                  const std::vector<app_site>& unhandled) {
  constexpr std::size_t k_named = 8;  // the message names this many; the evidence has them all
  const std::string file = ctx.where(anchor_of(s, "ssl_early_data")).file;
  std::string list;
  for (std::size_t i = 0; i < unhandled.size() && i < k_named; ++i) {
    const app_site& u = unhandled[i];
    list += (i ? ", " : "") + site_name(u) + " (" + line_of(ctx, *u.block, file) + ", " +
            std::string(u.handler->name.view());
    if (u.dropped && u.list && u.list->name.view() == "include")
      list += "; its `" + one_line(*u.list) + "` (not read here) sets a " +
              std::string(k_upstreams[u.kind].param) +
              " list of its own, which replaces the early-data one of " +
              line_of(ctx, *u.dropped, file);
    else if (u.dropped)
      list += "; its own " + std::string(k_upstreams[u.kind].param) +
              " replaces the early-data one of " + line_of(ctx, *u.dropped, file);
    list += ")";
  }
  if (unhandled.size() > k_named)
    list += " and " + std::to_string(unhandled.size() - k_named) + " more";
  const bool one = unhandled.size() == 1;
  auto f = ctx.make(
      id, engine::severity::warning,
      "ssl_early_data on but $ssl_early_data never reaches the application from " +
          (one ? list : std::to_string(unhandled.size()) + " locations: " + list) +
          (one ? ": a replayed 0-RTT request runs again there and the application cannot "
                 "answer 425 Too Early"
               : ": replayed 0-RTT requests run again there and the applications cannot answer "
                 "425 Too Early"),
      anchor_of(s, "ssl_early_data"));
  f.facts.push_back(setting_evidence(ctx, s, "ssl_early_data"));
  f.facts.push_back(setting_evidence(ctx, s, "ssl_protocols"));
  for (const auto& u : unhandled)
    f.facts.push_back({"not told of early data", site_name(u) + " -> " + one_line(*u.handler),
                       "location", ctx.where(u.block)});
  // One fix line per kind of handler and place: beside the header/param list a site takes
  // (a level's own list replaces every one from outside; sites that take one list, such as
  // one fastcgi_params file included in each, share a line), or, where no level has such a
  // list, once in the server block.
  for (std::size_t k = 0; k <= k_upstreams.size(); ++k) {
    std::vector<std::pair<std::string, std::string>> places;  // where the line goes, for whom
    for (const auto& u : unhandled) {
      if (u.kind != k) continue;
      std::string place;
      if (k == k_code)
        place = "in " + site_name(u) + ", or have its code read $ssl_early_data and answer 425";
      else if (u.list && u.list->name.view() == "include")
        place = "after `" + one_line(*u.list) + "` (" + line_of(ctx, *u.list, file) + ") in";
      else if (u.list)
        place = "beside the " + std::string(k_upstreams[k].param) + " lines at " +
                line_of(ctx, *u.list, file) + ", taken by";
      else
        place = "in the server block, for";
      auto it = std::find_if(places.begin(), places.end(),
                             [&](const auto& p) { return p.first == place; });
      if (k == k_code) {
        if (it == places.end()) places.emplace_back(place, "");
        continue;
      }
      if (it == places.end())
        places.emplace_back(place, site_name(u));
      else
        it->second += ", " + site_name(u);
    }
    const std::string line =
        k == k_code ? "if ($ssl_early_data) { return 425; }" : std::string(k_upstreams[k].fix);
    for (const auto& [place, whom] : places)
      f.fix += line + "  # " + place + (whom.empty() ? "" : " " + whom) + "\n";
  }
  f.fix += "# or turn 0-RTT off: ssl_early_data off;";
  f.server = server_label(ctx, s);
  return f;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  std::set<const config::directive*> seen_servers;
  std::optional<std::vector<std::string>> vars;  // worked out for the first server with 0-RTT
  std::optional<unread_index> unread;            // likewise
  for (const auto& s : m.servers) {
    if (!s.has_ssl || !model::is_on(s.get("ssl_early_data")) || !tls13_enabled(m, s)) continue;
    if (!seen_servers.insert(s.where).second) continue;
    if (s.context == model::context_kind::stream) {
      auto f = ctx.make(id, engine::severity::note,
                        "ssl_early_data on in a stream server: 0-RTT data can be replayed and the "
                        "proxied service cannot tell early data apart",
                        anchor_of(s, "ssl_early_data"));
      f.facts.push_back(setting_evidence(ctx, s, "ssl_early_data"));
      f.facts.push_back(setting_evidence(ctx, s, "ssl_protocols"));
      f.fix = "ssl_early_data off;";
      f.server = server_label(ctx, s);
      out.push_back(std::move(f));
      continue;
    }
    if (!vars) vars = early_data_variables(*m.cfg);
    if (!unread) unread = unread_includes(*m.cfg);
    // A server-level `if` runs in the server rewrite phase, before a location is chosen: it
    // covers every request of the server.
    std::vector<const config::directive*> refusals;
    for (const auto& d : s.where->block)
      if (refusal_return(d, *vars)) refusals.push_back(&d);
    if (!refusals.empty()) {
      out.push_back(handled_note(ctx, s, refusals, *vars));
      continue;
    }
    param_arrays http;
    if (const auto* block = enclosing_block(m, s))
      http = arrays_at(http, block->block, *vars, unread_in(*unread, *block));
    const param_arrays server =
        arrays_at(http, s.where->block, *vars, unread_in(*unread, *s.where));
    std::vector<app_site> sites;
    collect_sites(*unread, server, s.where->block, nullptr, nullptr, *vars, sites);
    if (sites.empty()) {
      out.push_back(static_note(ctx, s));
      continue;
    }
    std::vector<app_site> unhandled;
    std::vector<const config::directive*> handlers;
    for (const auto& site : sites) {
      if (!site.handled_by)
        unhandled.push_back(site);
      else if (std::find(handlers.begin(), handlers.end(), site.handled_by) == handlers.end())
        handlers.push_back(site.handled_by);
    }
    if (unhandled.empty())
      out.push_back(handled_note(ctx, s, handlers, *vars));
    else
      out.push_back(unhandled_warning(ctx, s, unhandled));
  }
}

}  // namespace

engine::rule early_data_replay() {
  engine::rule r{id, engine::severity::warning,
                 "0-RTT on where a location hands requests on without $ssl_early_data: replayed "
                 "requests run again",
                 doc, check};
  r.confirmed_by = engine::probe_question::early_data_replayed;
  return r;
}

}  // namespace ngxtls::rules
