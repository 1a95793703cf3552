// session-cache-per-worker: `ssl_session_cache builtin` (without a shared zone) on a socket
// served by more than one worker process.

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "session-cache-per-worker";

constexpr const char* doc = R"(# session-cache-per-worker

## What it flags
A listen socket whose default server uses `ssl_session_cache builtin` (alone, with no
`shared:` zone) while `worker_processes` is `auto` or above 1. Warning. With the default of one
worker, or with a `shared:` zone next to `builtin`, nothing is flagged.

## Why it matters
The `builtin` cache is OpenSSL's own, inside each worker process. The kernel hands a new
connection to any worker, so a client resumes only when it happens to land on the worker that
holds its session: with 4 workers, 10-16 of 40 TLS 1.2 session-ID resumptions succeeded here,
the rest were full handshakes. TLS 1.3 with tickets off (stateful tickets) is cached the same
way. nginx's docs also warn that `builtin` fragments memory.

## Example
```nginx
worker_processes auto;
http {
    ssl_session_cache builtin:20000;
    server { listen 443 ssl; ... }
}
```

## Fix
```nginx
ssl_session_cache shared:SSL:10m;   # one cache for every worker, about 40,000 sessions
```

## How the prober confirms it
`ngxtls probe --tls1.2` with `-c 4`: the session-ID resumption rate sits near 1/workers
instead of 100%.

## Source
docs/nginx-facts.md#session-id-cache (nginx 1.22.1, 4 workers: 10-16 of 40 resumed with `builtin`, 40/40 with
`shared:`); nginx docs, ngx_http_ssl_module `ssl_session_cache` ("builtin ... used by one
worker process only").
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  const bool many = m.worker_processes && *m.worker_processes != 1;  // 0 = auto
  if (!many) return;
  for (const auto& [di, sockets] : ssl_sockets_by_default(m)) {
    const model::server& d = m.servers[di];
    const auto* cache = d.get("ssl_session_cache");
    if (model::cache_kind(cache) != model::session_cache_kind::builtin) continue;
    const std::string workers =
        *m.worker_processes == 0 ? "auto" : std::to_string(*m.worker_processes);
    auto f = ctx.make(id, engine::severity::warning,
                      "ssl_session_cache is `builtin` (per worker process) with worker_processes " +
                          workers + ": a client resumes on " + socket_names(sockets) +
                          " only when it reaches the worker that cached its session",
                      anchor_of(d, "ssl_session_cache"));
    f.facts.push_back(setting_evidence(ctx, d, "ssl_session_cache"));
    f.facts.push_back({"worker_processes", workers, "main",
                       m.worker_processes_where ? std::optional(ctx.where(m.worker_processes_where))
                                                : std::nullopt});
    f.fix = "ssl_session_cache shared:SSL:10m;  # shared by every worker";
    f.server = server_label(ctx, d);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule session_cache_per_worker() {
  engine::rule r{
      id, engine::severity::warning,
      "`ssl_session_cache builtin` with several workers: sessions resume only on the same worker",
      doc, check};
  r.confirmed_by = engine::probe_question::session_id_resumption;
  r.costs_resumption = true;
  return r;
}

}  // namespace ngxtls::rules
