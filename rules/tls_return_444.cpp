// tls-return-444: `return 444` in a TLS server closes the connection without close_notify.

#include <set>

#include "rules/common.hpp"
#include "rules/rules.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "tls-return-444";

constexpr const char* doc = R"(# tls-return-444

## What it flags
A `return 444` in an http server that listens with TLS (in the server block, a location or an
`if`), as a note at the `return`.

## Why it matters
444 makes nginx close the TCP connection without a response and without TLS close_notify, on
every version measured (1.22.1, 1.26.3, 1.30.6); every other path measured, timeouts, errors,
`lingering_close`, HTTP/2 included, ends with close_notify. A client that reads to EOF with
OpenSSL's default (no `SSL_OP_IGNORE_UNEXPECTED_EOF`) fails with "unexpected eof while reading",
sends a fatal alert, and OpenSSL marks the session it holds not resumable: its next connection
is a full handshake (strict client: 0 of 6 resumed after `return 444`, 6 of 6 after a normal
response). Browsers ignore the missing close_notify. A TLS server that wants to turn unknown
names away can refuse the handshake instead, before any session exists.

## Example
```nginx
server {
    listen 443 ssl default_server;
    server_name _;
    return 444;
}
```

## Fix
```nginx
server {
    listen 443 ssl default_server;
    server_name _;
    ssl_reject_handshake on;   # nginx >= 1.19.4: no TLS session for unknown names
}
# or answer, which ends with close_notify:  return 421;
```

## How the prober confirms it
Probe question `closes_without_close_notify` (only for a `return 444` that `HEAD /` reaches: in
the server block or in `location /`): `ngxtls check --endpoint` reads each response to its end,
records whether close_notify came first, and runs the strict-client attempts; connections that
end without close_notify and a strict-client rate below the normal one confirm it, connections
that end with close_notify refute it. The sandbox answers with its own response, so `check
--sandbox` cannot see a `return`.

## Source
docs/nginx-facts.md#close-notify (measured on 1.22.1, 1.26.3 and 1.30.6); nginx's documentation
of `return` (444 closes the connection without a response) and `ssl_reject_handshake`.
)";

// A location the probe's `HEAD /` reaches: `location /` or `location = /`.
bool reached_by_head_root(const config::directive& d) {
  if (d.name.view() != "location") return false;
  const std::size_t n = d.args.size();
  if (n == 1) return d.args[0].value() == "/";
  return n == 2 && d.args[0].value() == "=" && d.args[1].value() == "/";
}

// Every `return 444` in `block` at any depth, with whether `HEAD /` reaches it (the server
// block itself and `location /`; an `if` or another location may not be).
void find_444(config::list<config::directive> block, bool reached,
              std::vector<std::pair<const config::directive*, bool>>& out) {
  for (const auto& d : block) {
    if (d.name.view() == "return" && !d.args.empty() && d.args[0].value() == "444") {
      out.emplace_back(&d, reached);
    } else if (d.has_block && d.name.view() != "map" && d.name.view() != "types") {
      find_444(d.block, reached && reached_by_head_root(d), out);
    }
  }
}

void check(const engine::context& ctx, engine::finding_list& out) {
  std::set<const config::directive*> seen;
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl || s.context != model::context_kind::http || s.where == nullptr) continue;
    std::vector<std::pair<const config::directive*, bool>> found;
    find_444(s.where->block, true, found);
    for (const auto& [d, reached] : found) {
      if (!seen.insert(d).second) continue;
      auto f = ctx.make(id, engine::severity::note,
                        "return 444 in a TLS server closes the connection without close_notify: "
                        "clients that read to EOF lose their session",
                        d);
      f.fix =
          "ssl_reject_handshake on;   # in a default server for unknown names (nginx >= 1.19.4)\n"
          "# or answer instead: return 421;";
      f.server = server_label(ctx, s);
      if (!reached) f.question = engine::probe_question::none;
      out.push_back(std::move(f));
    }
  }
}

}  // namespace

engine::rule tls_return_444() {
  engine::rule r{id, engine::severity::note,
                 "return 444 in a TLS server closes without close_notify: strict clients lose "
                 "the session",
                 doc, check};
  r.confirmed_by = engine::probe_question::closes_without_close_notify;
  return r;
}

}  // namespace ngxtls::rules
