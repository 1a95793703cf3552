// quic-host-key-missing: QUIC sockets whose address validation and stateless reset tokens are
// sealed with a random key made at each load (no quic_host_key), or with keys that differ
// across the instances of a fleet.

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "quic-host-key-missing";

/// Below this a host key is within guessing reach: 128 bits, half of the 32 random bytes nginx
/// makes when there is no quic_host_key (NGX_QUIC_DEFAULT_HOST_KEY_LEN, ngx_event_quic.h).
constexpr std::uint64_t min_key_bytes = 16;

constexpr const char* doc = R"(# quic-host-key-missing

## What it flags
On nginx 1.25.0 or later, each QUIC socket (`listen ... quic`) whose default server (the one
marked `default_server`, else the first on the socket: its settings serve every QUIC
connection there, made before the SNI is known) has no `quic_host_key`: a note, a warning with
`--fleet`. With `--fleet`, a name served over QUIC by several configurations whose keys differ
(a random key, or key files at different paths): a warning naming the members. Key files at
the same path are taken as the same key (their contents are not compared).

And, on every `quic_host_key` of an http block (nginx reads each while it reads the
configuration, whether a QUIC socket uses it or not), what nginx says of its file
(docs/nginx-facts.md#quic), with the path resolved against the conf prefix:
- not on this machine: a note ("not inspected here"), an error with `--strict-files` (nginx:
  `open() "FILE" failed`); unreadable here: the same;
- empty: an error (nginx: `"FILE" zero key size`); a directory or a device: an error (nginx:
  `pread() ... Is a directory`; a device such as /dev/null: zero key size); a FIFO: an error
  (nginx opens it blocking and waits there until something writes to it);
- shorter than 16 bytes: a warning. nginx takes any non-empty file, but a key within guessing
  reach lets whoever guesses it forge stateless resets and address validation tokens.
Only the file's size is reported, never its bytes.

## Why it matters
nginx seals QUIC address validation tokens (the `NEW_TOKEN` a client presents on its next
connection, the Retry token of `quic_retry on`) and stateless reset tokens with the host key.
Without `quic_host_key` it is random and made again at every start and reload: tokens issued
before a reload are refused after it (nginx closes the connection of a client that offers one
with INVALID_TOKEN, and the client starts over without it; without `quic_retry on` nginx issues
no NEW_TOKEN), and a stateless reset sent for a connection of the old key does not match,
so a client whose connection was lost waits for its idle timeout. Behind one name, instances
with different keys refuse each other's tokens in the same way.

## Example
```nginx
server {
    listen 443 quic reuseport;
    listen 443 ssl;
    quic_retry on;
}
```

## Fix
```nginx
quic_host_key /etc/nginx/quic_host.key;  # the same file on every instance (openssl rand 32)
```

## How the prober confirms it
`ngxtls check --sandbox --reload` takes a NEW_TOKEN token and a session on each QUIC socket
before `nginx -s reload` and offers them 8 times after it; `--instances 2` offers one
instance's token 8 times from new UDP ports, so that both instances get it. Connections closed
with INVALID_TOKEN (nginx's "cannot decrypt token", measured on 1.26.3 and 1.30.6: 8 of 8 after
a reload, most of 8 across two instances) or answered with a Retry confirm it; offers taken
without one refute it (measured with `quic_host_key` set: 8 of 8 taken after a reload). nginx
sends NEW_TOKEN only with `quic_retry on`: without it there is no token to refuse and the
verdict is not testable (stateless reset tokens are not measured). One instance without
`--reload` shows no second key: not testable. tests/integration/test_quic_nginx.cpp "check
--sandbox judges quic_host_key across reloads and instances and 0-RTT".

## Source
nginx's ngx_http_v3_module documentation (`quic_host_key`: "Sets a file with the secret key
used to encrypt stateless reset and address validation tokens. By default, a random key is
generated on each reload. Tokens generated with old keys are not accepted."); nginx
src/event/quic/ngx_event_quic.c (the host key of the server that accepts the connection);
nginx src/http/v3/ngx_http_v3_module.c (`ngx_http_quic_host_key`: open, "zero key size", the
file as HKDF input) and src/event/quic/ngx_event_quic.h (`NGX_QUIC_DEFAULT_HOST_KEY_LEN` 32).
The file verdicts are measured with `nginx -t` on 1.26.3 and 1.30.6 by
tests/integration/test_quic_nginx.cpp (docs/nginx-facts.md#quic); tokens across a reload and
two instances with ngxtls's own QUIC prober (the ngtcp2 example client of Debian 12, 0.12.1,
writes NEW_TOKEN files it cannot read back).
)";

/// The key domain of default server `d` of one member: its quic_host_key file, resolved, or a
/// random key of its own.
std::string key_domain(const engine::context& ctx, const model::server& d,
                       const std::string& member) {
  const auto* key = d.get("quic_host_key");
  if (!key || key->args().empty()) return "random key of " + member;
  return "key file " +
         std::filesystem::path(ctx.resolve(key->args().front())).lexically_normal().string();
}

const config::directive* quic_listen_of(const model::server& d, const model::listen_socket& k) {
  for (const auto& l : d.listens)
    if (l.quic && l.where && l.port == k.port && l.address == k.address) return l.where;
  return default_anchor(d);
}

/// Per member: each name served over QUIC -> its key domain.
std::vector<std::pair<std::string, std::map<std::string, std::string>>> fleet_domains(
    const engine::context& ctx) {
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> out;
  for (const auto& mem : ctx.options().fleet) {
    engine::context other(*mem.model, ctx.options());
    std::map<std::string, std::string> by_name;
    for (const auto& k : mem.model->sockets) {
      if (!k.quic || k.context != model::context_kind::http) continue;
      const std::string domain = key_domain(other, mem.model->servers[k.default_server], mem.label);
      for (std::size_t si : k.servers)
        for (const auto& n : mem.model->servers[si].names)
          if (!n.empty() && n != "_") by_name.emplace(n, domain);
    }
    out.emplace_back(mem.label, std::move(by_name));
  }
  return out;
}

/// The quic_host_key files nginx opens while it reads the configuration (every such directive
/// of an http block, whether or not a QUIC socket uses it): nginx refuses to start when one
/// cannot be opened, is empty or is not a file it can read; any non-empty file is taken (it is
/// the input of the HKDF that derives the 32-byte token keys). Only sizes and reasons are told,
/// never the key's bytes.
void check_key_files(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (!m.cfg) return;
  const bool strict = ctx.options().strict_files;
  for (const auto& top : m.cfg->root) {
    if (top.name != "http" || !top.has_block) continue;
    walk(top.block, [&](const config::directive& d) {
      if (d.name != "quic_host_key" || d.args.size() != 1) return;
      const std::string path = ctx.resolve(d.args[0].value());
      const auto& l = ctx.files().ticket_key(path);
      std::string message;
      engine::severity sev = engine::severity::error;
      std::string fix = "# openssl rand -out " + path + " 32";
      if (l.missing) {
        sev = strict ? engine::severity::error : engine::severity::note;
        message = "quic_host_key file \"" + path + "\" is not on this machine" +
                  (strict ? std::string(": nginx refuses to start (open() \"") + path +
                                "\" failed (2: No such file or directory))"
                          : std::string(": not inspected here (nginx refuses to start without "
                                        "it)"));
      } else if (!l.facts && l.error.rfind("not a regular file", 0) == 0) {
        // nginx opens it blocking: a FIFO without a writer stops nginx -t and the start there.
        message = "quic_host_key \"" + path + "\" is " + l.error +
                  (l.error.find("FIFO") != std::string::npos
                       ? ": nginx waits at start until something writes to it"
                       : ": nginx refuses to start (it reads no key from it)");
      } else if (!l.facts) {
        sev = strict ? engine::severity::error : engine::severity::note;
        message = "quic_host_key file \"" + path + "\" cannot be read here (" + l.error + ")" +
                  (strict ? ": nginx refuses to start if it cannot read it either"
                          : ": not inspected here");
        fix.clear();
      } else if (l.facts->size_bytes == 0) {
        message = "\"" + path + "\" zero key size: nginx refuses to start (quic_host_key)";
      } else if (l.facts->size_bytes < min_key_bytes) {
        sev = engine::severity::warning;
        message = "quic_host_key \"" + path + "\" holds " + std::to_string(l.facts->size_bytes) +
                  " byte" + (l.facts->size_bytes == 1 ? "" : "s") +
                  ": nginx takes it, but a key of fewer than " + std::to_string(min_key_bytes) +
                  " bytes can be guessed, and whoever guesses it forges stateless resets that "
                  "close any QUIC connection and address validation tokens that pass "
                  "quic_retry (nginx makes a random key of 32 bytes for itself)";
      } else {
        return;
      }
      auto f = ctx.make(id, sev, message, &d);
      if (l.facts)
        f.facts.push_back(
            {"size_bytes", std::to_string(l.facts->size_bytes), "file", ctx.where(&d)});
      else
        f.facts.push_back({"quic_host_key", std::string(d.args[0].value()), "file", ctx.where(&d)});
      f.fix = fix;
      out.push_back(std::move(f));
    });
  }
}

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  if (m.versions.nginx < model::version{1, 25, 0}) return;
  check_key_files(ctx, out);
  const bool fleet = ctx.options().fleet.size() > 1;
  std::set<std::size_t> told;  // default servers already named
  for (const auto& k : m.sockets) {
    if (!k.quic || k.context != model::context_kind::http) continue;
    const model::server& d = m.servers[k.default_server];
    if (d.get("quic_host_key") || !told.insert(k.default_server).second) continue;
    const bool retry = model::is_on(d.get("quic_retry"));
    auto f = ctx.make(
        id, fleet ? engine::severity::warning : engine::severity::note,
        "QUIC on " + k.name() +
            " seals address validation and stateless reset tokens with a random key made at "
            "each start and reload (no quic_host_key): tokens issued before a reload are refused "
            "after it" +
            (retry ? " (quic_retry on: nginx closes the connection of a client that offers one "
                     "with INVALID_TOKEN, and the client starts over without it)"
                   : " (without quic_retry nginx issues no NEW_TOKEN: the stateless reset "
                     "tokens change)") +
            (fleet ? ", and no other instance of the fleet accepts this one's tokens" : ""),
        quic_listen_of(d, k));
    f.facts.push_back(setting_evidence(ctx, d, "quic_host_key"));
    f.facts.push_back(setting_evidence(ctx, d, "quic_retry"));
    f.fix =
        "quic_host_key /etc/nginx/quic_host.key;  # openssl rand -out FILE 32; the same file "
        "on every instance";
    f.server = server_label(ctx, d);
    f.ports.push_back(k.port);
    out.push_back(std::move(f));
  }
  if (!fleet) return;
  std::string self;
  for (const auto& mem : ctx.options().fleet)
    if (mem.model == &m) self = mem.label;
  if (self.empty()) return;
  const auto domains = fleet_domains(ctx);
  for (const auto& k : m.sockets) {
    if (!k.quic || k.context != model::context_kind::http) continue;
    const model::server& d = m.servers[k.default_server];
    const auto* key = d.get("quic_host_key");
    if (!key || !key->where()) continue;  // the random key is told above
    std::set<std::string> names;
    for (std::size_t si : k.servers)
      for (const auto& n : m.servers[si].names)
        if (!n.empty() && n != "_") names.insert(n);
    for (const auto& name : names) {
      std::set<std::string> seen;
      std::string members;
      for (const auto& [label, by_name] : domains) {
        const auto it = by_name.find(name);
        if (it == by_name.end()) continue;
        seen.insert(it->second);
        members += (members.empty() ? "" : ", ") + label + " (" + it->second + ")";
      }
      if (seen.size() < 2) continue;
      auto f =
          ctx.make(id, engine::severity::warning,
                   "QUIC for " + name + " uses different host keys across the fleet: " + members +
                       ": an address validation or stateless reset token issued by one "
                       "instance is refused by the others",
                   key->where());
      f.facts.push_back(setting_evidence(ctx, d, "quic_host_key"));
      f.fix = "quic_host_key /etc/nginx/quic_host.key;  # the same file on every instance";
      f.server = server_label(ctx, d);
      f.ports.push_back(k.port);
      out.push_back(std::move(f));
      break;  // one finding per socket
    }
  }
}

}  // namespace

engine::rule quic_host_key_missing() {
  engine::rule r{id, engine::severity::note,
                 "QUIC tokens sealed with a random key per reload, keys differing across a "
                 "fleet, or a quic_host_key file nginx refuses or that is short enough to guess",
                 doc, check};
  r.confirmed_by = engine::probe_question::quic_tokens_kept;
  r.costs_resumption = false;
  return r;
}

}  // namespace ngxtls::rules
