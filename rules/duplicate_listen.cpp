// duplicate-listen: a listen on an address and port that nginx refuses as a duplicate.

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "duplicate-listen";

constexpr const char* doc = R"(# duplicate-listen

## What it flags
A `listen` whose address and port nginx has already taken, and refuses. Error, at the second
listen:
- mail: a second server (or the same server again) on an address and port, on every version:
  mail servers are not told apart by name;
- stream before nginx 1.25.5: the same (from 1.25.5 stream servers share a socket and are
  chosen by `server_name`);
- any context: the same address and port twice in one server (`listen 443 ssl;` and
  `listen 0.0.0.0:443;`; a `quic` listen is UDP and another socket than a TCP one).

Addresses are compared as nginx compares them: `*:465`, `0.0.0.0:465` and `465` are one, and
so are `[::1]:465` and `[0::1]:465`. A host name is not resolved (lint reaches no host), so
`localhost:465` beside `127.0.0.1:465` is not reported, nor an address holding a template
placeholder (`${MAIL_IP}:465`, which nginx cannot resolve).

Such a listen joins no socket in the model: the servers are not modelled as one shared socket
(no session-sharing findings between them).

## Why it matters
nginx refuses to start (or reload): `nginx -t` says `duplicate "127.0.0.1:465" address and port
pair in FILE:LINE` (mail, stream before 1.25.5) or `a duplicate listen 0.0.0.0:443 in FILE:LINE`,
at the second listen, with the address as nginx prints it (`0.0.0.0` for `*`). A mail stack
copied from an example that gives every server the same public `address:465` never starts.

## Example
```nginx
mail {
    server {
        listen 192.0.2.1:465 ssl;
        protocol smtp;
    }
    server {
        listen 192.0.2.1:587;
        listen 192.0.2.1:465 ssl;   # duplicate "192.0.2.1:465" address and port pair
        protocol smtp;
        starttls on;
    }
}
```

## Fix
Give each mail (or stream, before 1.25.5) server its own address and port, and list an
address and port once per server:
```nginx
    server {
        listen 192.0.2.1:587;
        protocol smtp;
        starttls on;
    }
```

## How the prober confirms it
It cannot: nginx does not start. `check --sandbox` reports nginx -t's verdict.

## Source
docs/nginx-facts.md#duplicate-listen: measured with `nginx -t` on nginx 1.22.1 (Debian, mail
and stream modules), 1.26.3 (stream, http) and 1.30.6 (http); nginx
src/mail/ngx_mail_core_module.c (ngx_mail_core_listen: `duplicate "%V" address and port pair`),
nginx CHANGES 1.25.5 (virtual servers in the stream module). Tests: fixtures/rules/duplicate-listen
and tests/integration/test_site_files.cpp "a listen nginx refuses as a duplicate ...".
)";

/// The address and port of `l` as nginx prints them in its duplicate messages: the wildcard
/// is "0.0.0.0"; the model keeps IPv6 addresses in inet_ntop's spelling already.
std::string nginx_address_text(const model::listen_directive& l) {
  return (l.address == "*" ? std::string("0.0.0.0") : l.address) + ":" + std::to_string(l.port);
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  for (const auto& s : m.servers) {
    for (const auto& l : s.listens) {
      if (!l.duplicate_of || !l.where) continue;
      const bool pair_message =
          s.context == model::context_kind::mail ||
          (s.context == model::context_kind::stream && m.versions.nginx < model::version{1, 25, 5});
      const std::string text = nginx_address_text(l);
      auto f = ctx.make(
          id, engine::severity::error,
          (pair_message ? "duplicate \"" + text + "\" address and port pair"
                        : "a duplicate listen " + text) +
              ": nginx refuses to start (the address and port are taken by the listen at " +
              to_string(ctx.where(l.duplicate_of)) + ")",
          l.where);
      f.facts.push_back(
          {"listen",
           std::string(l.where->args.empty() ? std::string_view() : l.where->args[0].value()),
           "listen", ctx.where(l.duplicate_of)});
      f.fix = pair_message ? "# give this server its own address and port, e.g.\nlisten " +
                                 (l.address == "*" ? std::string() : l.address + ":") + "PORT" +
                                 (l.ssl ? " ssl;" : ";")
                           : "# remove this listen: the server listens there already";
      f.server = server_label(ctx, s);
      out.push_back(std::move(f));
    }
  }
}

}  // namespace

engine::rule duplicate_listen() {
  engine::rule r{id, engine::severity::error,
                 "Listen on an address and port nginx refuses as a duplicate", doc, check};
  r.confirmed_by = engine::probe_question::nginx_t_verdict;
  return r;
}

}  // namespace ngxtls::rules
