// quic-reuseport: QUIC sockets and nginx's workers: `reuseport` given twice, missing with
// several workers, or without `quic_bpf on` for connection migration.

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "quic-reuseport";

constexpr const char* doc = R"(# quic-reuseport

## What it flags
On nginx 1.25.0 or later, for each QUIC socket (`listen ... quic`) of the http servers:
- `reuseport` on the listens of more than one server for the same address and port: error at
  the second one, in nginx's words (`duplicate listen options for ADDRESS`; a repeat within one
  server is `duplicate-listen`'s);
- several workers (`worker_processes` above 1, or `auto`) and no `reuseport` on the socket:
  warning before nginx 1.30 (on 1.26.3 with 4 workers, 19 of 30 fresh HTTP/3 requests were
  answered; with `reuseport` 30 of 30), a note from 1.30 (on 1.30.6, 478 of 480 without
  `reuseport`, 480 of 480 with it);
- several workers, `reuseport`, and no `quic_bpf on` in the main context: note. The kernel
  spreads the socket's datagrams over the workers by the client's address and port, so a client
  whose address changes (NAT rebinding, a phone leaving Wi-Fi) lands on a worker that does not
  know its connection; `quic_bpf on` (Linux) routes datagrams by connection ID instead.

## Why it matters
A QUIC connection lives in one worker. Without `reuseport`, the workers share one UDP socket
and a datagram of a connection may be read by another worker: on nginx 1.26.3 about a third of
new HTTP/3 requests then failed (docs/nginx-facts.md#quic). A second `reuseport` on the same
socket stops nginx from starting at all.

## Example
```nginx
worker_processes 4;
http {
    server { listen 443 quic; listen 443 ssl; server_name example.com; }
}
```

## Fix
```nginx
quic_bpf on;                 # main context, Linux
listen 443 quic reuseport;   # on one server per address and port
```

## How the prober confirms it
Not yet: `ngxtls probe --quic` measures QUIC resumption and 0-RTT by hand, but no judge holds
this rule against it.

## Source
docs/nginx-facts.md#quic (measured on 1.26.3 and 1.30.6 with ngtcp2's example client, and
nginx's `duplicate listen options` error by tests/integration/test_quic_nginx.cpp); nginx's
ngx_http_v3_module documentation ("Along with the quic parameter it is also possible to specify
the reuseport parameter to make it work properly with multiple workers"; `quic_bpf`: "enables
routing of QUIC packets using eBPF. When enabled, this allows supporting QUIC connection
migration"). The migration case is from that documentation, not measured here.
)";

bool several_workers(const model::model& m) {
  return m.worker_processes && (*m.worker_processes == 0 || *m.worker_processes > 1);
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (m.versions.nginx < model::version{1, 25, 0}) return;
  const bool several = several_workers(m);
  const std::string workers =
      several
          ? (*m.worker_processes == 0 ? std::string("worker_processes auto")
                                      : "worker_processes " + std::to_string(*m.worker_processes))
          : std::string();
  for (const auto& k : m.sockets) {
    if (!k.quic || k.context != model::context_kind::http) continue;
    const model::server& d = m.servers[k.default_server];
    if (k.reuseport_listens.size() > 1) {
      auto f =
          ctx.make(id, engine::severity::error,
                   "nginx refuses this configuration: duplicate listen options for " + k.name() +
                       " (`reuseport` may be given on one QUIC listen of an "
                       "address and port only)",
                   k.reuseport_listens[1]);
      f.fix = "# keep `reuseport` on one `listen " + std::to_string(k.port) + " quic` only";
      f.server = server_label(ctx, d);
      f.ports.push_back(k.port);
      out.push_back(std::move(f));
      continue;
    }
    if (!several) continue;
    const config::directive* at = nullptr;
    for (std::size_t si : k.servers)
      for (const auto& l : m.servers[si].listens)
        if (l.quic && l.where && !at && l.port == k.port && l.address == k.address) at = l.where;
    if (!k.reuseport) {
      const bool measured_broken = m.versions.nginx < model::version{1, 30, 0};
      auto f = ctx.make(
          id, measured_broken ? engine::severity::warning : engine::severity::note,
          "QUIC socket " + k.name() + " has no `reuseport` with " + workers +
              ": the workers share one UDP socket and a datagram may reach a worker that does "
              "not hold its connection" +
              (measured_broken ? " (nginx 1.26.3, 4 workers: 19 of 30 new HTTP/3 requests "
                                 "answered; with reuseport 30 of 30)"
                               : " (nginx 1.30.6 answered 478 of 480 here, 480 of 480 with "
                                 "reuseport; nginx's documentation "
                                 "still asks for reuseport with several workers)"),
          at ? at : default_anchor(d));
      f.fix = "listen " + std::to_string(k.port) + " quic reuseport;";
      f.server = server_label(ctx, d);
      f.ports.push_back(k.port);
      out.push_back(std::move(f));
      continue;
    }
    if (m.quic_bpf.value_or(false)) continue;
    auto f = ctx.make(id, engine::severity::note,
                      "QUIC socket " + k.name() + " has `reuseport` with " + workers +
                          " but no `quic_bpf on`: the kernel picks a worker by the client's "
                          "address, so a client whose address changes (NAT rebinding, a phone "
                          "leaving Wi-Fi) reaches a worker that does not know its connection",
                      m.quic_bpf_where ? m.quic_bpf_where
                                       : (k.reuseport_listens.empty() ? default_anchor(d)
                                                                      : k.reuseport_listens[0]));
    f.facts.push_back({"quic_bpf", m.quic_bpf ? (*m.quic_bpf ? "on" : "off") : "off",
                       m.quic_bpf ? "main" : "default", std::nullopt});
    f.fix = "quic_bpf on;  # main context (Linux)";
    f.server = server_label(ctx, d);
    f.ports.push_back(k.port);
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule quic_reuseport() {
  engine::rule r{id, engine::severity::warning,
                 "QUIC socket with reuseport doubled, or missing with several workers, or "
                 "without quic_bpf",
                 doc, check};
  r.confirmed_by = engine::probe_question::none;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
