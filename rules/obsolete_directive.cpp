// obsolete-directive: `ssl on|off` (deprecated in 1.15.0, removed in 1.25.1), `listen ... http2`
// (deprecated in 1.25.1), `listen ... spdy` (removed in 1.9.5), and the HTTP/2 push
// directives (obsolete from 1.25.1).

#include <unordered_set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "obsolete-directive";

constexpr const char* doc = R"(# obsolete-directive

## What it flags
Directives and parameters that the assumed nginx version deprecated or removed:
- `ssl on;` / `ssl off;`: warning from nginx 1.15.0 (deprecated), error from 1.25.1 (removed:
  `unknown directive "ssl"`).
- `listen ... http2`: warning from 1.25.1 (`nginx -t` warns the parameter is deprecated; use
  `http2 on;`).
- `listen ... spdy`: error from 1.9.5 (`invalid parameter "spdy"`).
- `ssl on` and `starttls on|only` in one mail block, before 1.25.1: error, at the later of the
  two, in nginx's words (`"ssl" directive conflicts with "starttls"` at the starttls line when
  `ssl on` comes first, `"starttls" directive conflicts with "ssl on"` at the ssl line when it
  comes second). A `listen ... ssl` beside `starttls` is not one: nginx accepts
  it (implicit TLS on that port, STARTTLS on the others; docs/nginx-facts.md#mail-starttls).
- `http2_push`, `http2_push_preload`: warning from 1.25.1 (server push was removed; the
  directives are ignored).

## Why it matters
A removed directive stops nginx at the next upgrade; a deprecated one warns on every
`nginx -t` and hides the warnings that matter. `ssl on` also has a trap of its own: it turns
TLS on for every `listen` of the server, so a plain-HTTP port in the same server breaks.

## Example
```nginx
server {
    listen 443 http2;
    ssl on;
}
```

## Fix
```nginx
server {
    listen 443 ssl;
    http2 on;        # nginx >= 1.25.1; before that keep `listen 443 ssl http2;`
}
```

## How the prober confirms it
Not applicable: `nginx -t` on the target version reports it.

## Source
nginx CHANGES: 1.15.0 ("the ssl directive is deprecated; the ssl parameter of the listen
directive should be used instead"), 1.25.1 (the `ssl` directive removed; `listen ... http2`
deprecated in favour of the `http2` directive; HTTP/2 server push removed), 1.9.5 (SPDY
replaced by HTTP/2); docs/nginx-facts.md#builtin-defaults.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (!m.cfg) return;
  const auto& v = m.versions.nginx;
  const bool ssl_removed = v >= model::version{1, 25, 1};
  const bool ssl_deprecated = v >= model::version{1, 15, 0};
  std::unordered_set<const config::directive*> mail_servers;
  for (const auto& s : m.servers)
    if (s.context == model::context_kind::mail) mail_servers.insert(s.where);
  walk(m.cfg->root, [&](const config::directive& d) {
    if (d.name == "ssl" && !d.has_block && ssl_deprecated) {
      const std::string value(d.args.empty() ? std::string_view() : d.args[0].value());
      auto f = ctx.make(
          id, ssl_removed ? engine::severity::error : engine::severity::warning,
          ssl_removed ? "the `ssl` directive was removed in nginx 1.25.1: nginx " + v.str() +
                            " refuses to start (unknown directive \"ssl\")"
                      : "the `ssl` directive is deprecated since nginx 1.15.0 (removed in 1.25.1): "
                        "use the `ssl` parameter of `listen`",
          &d);
      f.facts.push_back({"ssl", value, "server", ctx.where(&d)});
      f.fix = value == "on" ? "# remove `ssl on;` and mark the TLS listens:\nlisten 443 ssl;"
                            : "# remove `ssl off;` (plain listens need nothing)";
      out.push_back(std::move(f));
    }
    // `ssl on` and `starttls on|only` in one mail block: nginx refuses the later one (a
    // `listen ... ssl` beside starttls is fine: implicit TLS on that port, STARTTLS on others).
    if ((d.name == "mail" || (d.name == "server" && mail_servers.count(&d))) && d.has_block &&
        !ssl_removed) {
      const config::directive *ssl_on = nullptr, *starttls = nullptr;
      for (const auto& c : d.block) {
        const std::string_view a = c.args.empty() ? std::string_view() : c.args[0].value();
        if (c.name == "ssl" && a == "on") ssl_on = &c;
        if (c.name == "starttls" && (a == "on" || a == "only")) starttls = &c;
      }
      if (ssl_on && starttls) {
        const bool ssl_last = ssl_on->offset > starttls->offset;
        auto f = ctx.make(id, engine::severity::error,
                          ssl_last ? "\"starttls\" directive conflicts with \"ssl on\": nginx " +
                                         v.str() + " refuses to start"
                                   : "\"ssl\" directive conflicts with \"starttls\": nginx " +
                                         v.str() + " refuses to start",
                          ssl_last ? ssl_on : starttls);
        f.facts.push_back({"ssl", "on", "server", ctx.where(ssl_on)});
        f.facts.push_back(
            {"starttls", std::string(starttls->args[0].value()), "server", ctx.where(starttls)});
        f.fix =
            "# implicit TLS on its own port, STARTTLS on the plain one:\nlisten 993 ssl;\n"
            "listen 143;\nstarttls on;";
        f.question = engine::probe_question::nginx_t_verdict;
        out.push_back(std::move(f));
      }
    }
    if ((d.name == "http2_push" || d.name == "http2_push_preload") &&
        v >= model::version{1, 25, 1}) {
      auto f = ctx.make(id, engine::severity::warning,
                        "`" + std::string(d.name) +
                            "` is obsolete from nginx 1.25.1 (HTTP/2 server push was removed): "
                            "nginx ignores it with a warning",
                        &d);
      f.fix = "# remove it; use 103 Early Hints or preload links instead";
      out.push_back(std::move(f));
    }
    if (d.name == "listen") {
      for (const auto& a : d.args) {
        if (a.value() == "http2" && v >= model::version{1, 25, 1}) {
          auto f = ctx.make(id, engine::severity::warning,
                            "the `http2` parameter of `listen` is deprecated since nginx 1.25.1: "
                            "use `http2 on;` in the server",
                            &d);
          f.fix = "http2 on;";
          out.push_back(std::move(f));
        }
        if (a.value() == "spdy" && v >= model::version{1, 9, 5}) {
          auto f = ctx.make(id, engine::severity::error,
                            "`listen ... spdy` was removed in nginx 1.9.5: nginx " + v.str() +
                                " refuses it (invalid parameter \"spdy\"); use http2",
                            &d);
          f.fix = v >= model::version{1, 25, 1} ? "http2 on;" : "listen 443 ssl http2;";
          out.push_back(std::move(f));
        }
      }
    }
  });
}

}  // namespace

engine::rule obsolete_directive() {
  engine::rule r{
      id, engine::severity::warning,
      "Deprecated or removed directive for the assumed nginx version (ssl on, listen http2, ...)",
      doc, check};
  r.confirmed_by = engine::probe_question::nginx_t_warns_at_line;
  return r;
}

}  // namespace ngxtls::rules
