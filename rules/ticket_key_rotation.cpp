// ticket-key-rotation: ssl_session_ticket_key files that break resumption when rotated,
// are the wrong size, or are readable by others.

#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include "engine/fix.hpp"
#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "ticket-key-rotation";

constexpr const char* doc = R"(# ticket-key-rotation

## What it flags
- With `--baseline OLD_CONFIG`: error when the new key list of a socket's default server no
  longer holds the key that encrypted under the old config (its first key), compared by a
  fingerprint of the file's content where readable, else by path.
- Error: a key file that is not 48 or 80 bytes (nginx: `"FILE" must be 48 or 80 bytes`; nginx
  reports it at the block's closing brace, ngxtls at the directive).
- Warning: a key file readable by group or others (it holds the keys that protect every
  session's master secret).
- Note: a single key. The next rotation must list `[new, this one]`, never replace it in place.
- On sockets that issue no tickets (every server that completes handshakes there has
  `ssl_session_tickets off`; a default server with `ssl_reject_handshake on` completes none)
  only the size error applies: nginx reads the files, but they seal nothing.
- Two or more key files of one server with the same content: an error naming both (a rotation
  that shifts files and never makes a new key ends this way after one run: one key is in
  effect, and the "previous" one protects nothing).
- A key file not present on this machine is counted in `file-not-inspected`'s note; with
  `--strict-files` it is an error there.

## Why it matters
Only the first `ssl_session_ticket_key` encrypts; the others only decrypt (a ticket opened
with a later key is renewed). Dropping the key that was encrypting until now makes every
outstanding ticket undecryptable: every client does a full handshake at once.

## Example
Rotation from `[k1]` to `[k2]` (or to `[k3, k2]` when `k1` was first): every k1 ticket fails.

## Fix
Rotate in steps, on every instance:
```nginx
# step 1 (everywhere): add the new key after the current one (decrypt only)
ssl_session_ticket_key tickets/current.key;
ssl_session_ticket_key tickets/new.key;
# step 2 (once every instance has it): promote it, keep the old one to decrypt
ssl_session_ticket_key tickets/new.key;
ssl_session_ticket_key tickets/current.key;
```
Make keys with `umask 077; openssl rand 80 > FILE` (mode 0600).

## How the prober confirms it
`ngxtls probe --sess-out before.pem` before the deploy, `ngxtls probe --sess-in before.pem`
after it: the saved ticket no longer resumes. The key name the prober reports is the key
file's first 16 bytes.

## Source
docs/nginx-facts.md#ticket-key-rotation (nginx 1.22.1: [k1] -> [k2,k1] resumes a k1 ticket 10/10; -> [k2] or [k3,k2]
0/10); nginx docs for ssl_session_ticket_key (http://nginx.org/en/docs/http/ngx_http_ssl_module.html#ssl_session_ticket_key).
)";

// Identity of a key file for comparing two configs: content fingerprint, else the path.
struct key_id {
  std::string fingerprint;  // empty when unreadable
  std::string path;
};

key_id identify(const engine::context& ctx, const std::string& arg) {
  key_id k;
  k.path = ctx.resolve(arg);
  const auto& l = ctx.files().ticket_key(k.path);
  if (l.facts) k.fingerprint = l.facts->fingerprint;
  return k;
}

bool same_key(const key_id& a, const key_id& b) {
  if (!a.fingerprint.empty() && !b.fingerprint.empty()) return a.fingerprint == b.fingerprint;
  return a.path == b.path;
}

void check_files(const engine::context& ctx, engine::finding_list& out) {
  const auto& m = ctx.model();
  const bool strict = ctx.options().strict_files;
  std::set<const config::directive*> seen, copies_reported;
  const auto on_ticket_sockets = servers_on_ticket_sockets(m);
  for (const auto& s : m.servers) {
    if (!s.has_ssl) continue;
    const auto* keys = s.get("ssl_session_ticket_key");
    if (!keys) continue;
    // nginx reads the files either way (a wrong size stops it), but keys that seal no ticket
    // protect nothing and need no rotation.
    const bool sealing = on_ticket_sockets[static_cast<std::size_t>(&s - m.servers.data())];
    for (const auto& occ : keys->values) {
      if (!occ.where || occ.args.empty() || !seen.insert(occ.where).second) continue;
      const std::string arg(occ.args.front());
      const std::string path = ctx.resolve(arg);
      const auto& l = ctx.files().ticket_key(path);
      // A file not on this machine is counted in file-not-inspected's summary (an error of its
      // own there with --strict-files).
      if (!l.facts && l.missing) continue;
      if (!l.facts) {
        auto f = ctx.make(id, strict ? engine::severity::error : engine::severity::note,
                          "ticket key file \"" + path + "\" " +
                              (l.missing ? std::string("is not on this machine")
                                         : "cannot be read (" + l.error + ")") +
                              (strict ? "" : ": not inspected here"),
                          occ.where);
        f.facts.push_back({"ssl_session_ticket_key", arg, "file", ctx.where(occ.where)});
        out.push_back(std::move(f));
        continue;
      }
      const auto& k = *l.facts;
      if (!k.valid_size) {
        auto f = ctx.make(id, engine::severity::error,
                          "\"" + path + "\" must be 48 or 80 bytes (it has " +
                              std::to_string(k.size_bytes) + "): nginx refuses to start",
                          occ.where);
        f.facts.push_back(
            {"size_bytes", std::to_string(k.size_bytes), "file", ctx.where(occ.where)});
        f.fix = "# umask 077; openssl rand 80 > " + path;
        out.push_back(std::move(f));
      }
      if (k.group_or_other_readable && sealing) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", k.mode);
        auto f = ctx.make(id, engine::severity::warning,
                          "ticket key file \"" + path + "\" is readable by group or others (mode " +
                              mode + "): whoever reads it can decrypt every session it sealed",
                          occ.where);
        f.facts.push_back({"mode", mode, "file", ctx.where(occ.where)});
        f.fix = "chmod 600 " + path;
        out.push_back(std::move(f));
      }
    }
    // Two files with one content: the rotation copied a key instead of making one, so one key
    // is in effect and the "previous" one protects nothing.
    if (keys->values.size() > 1) {
      std::map<std::string, const model::occurrence*> by_content;
      for (const auto& occ : keys->values) {
        if (!occ.where || occ.args.empty()) continue;
        const std::string path = ctx.resolve(std::string(occ.args.front()));
        const auto& l = ctx.files().ticket_key(path);
        if (!l.facts || l.facts->fingerprint.empty()) continue;
        auto [it, fresh] = by_content.emplace(l.facts->fingerprint, &occ);
        // Servers that inherit one http-level list: one finding per directive.
        if (fresh || !copies_reported.insert(occ.where).second) continue;
        const std::string first_path = ctx.resolve(std::string(it->second->args.front()));
        auto f = ctx.make(id, engine::severity::error,
                          "ticket key files \"" + first_path + "\" and \"" + path +
                              "\" hold the same key: the rotation copied a key instead of "
                              "making a new one, so one key is in effect and the previous one "
                              "protects nothing",
                          occ.where);
        f.facts.push_back({"ssl_session_ticket_key", std::string(it->second->args.front()), "file",
                           ctx.where(it->second->where)});
        f.facts.push_back({"ssl_session_ticket_key", std::string(occ.args.front()), "file",
                           ctx.where(occ.where)});
        f.fix = "# make the new key, never copy one: umask 077; openssl rand 80 > " + first_path;
        f.server = server_label(ctx, s);
        out.push_back(std::move(f));
      }
    }
    if (sealing && keys->values.size() == 1 && keys->where() && seen.count(keys->where()) &&
        keys->from != model::origin::nginx_default) {
      auto f = ctx.make(id, engine::severity::note,
                        "a single ticket key: the next rotation must list the new key first and "
                        "keep this one after it, never replace it in place",
                        keys->where());
      f.facts.push_back(setting_evidence(ctx, s, "ssl_session_ticket_key"));
      f.fix = "ssl_session_ticket_key NEW.key;\nssl_session_ticket_key " +
              std::string(keys->first()) + ";";
      out.push_back(std::move(f));
    }
  }
}

void check_baseline(const engine::context& ctx, engine::finding_list& out) {
  const model::model* old = ctx.options().baseline;
  if (!old) return;
  const auto& m = ctx.model();
  engine::context old_ctx(*old, ctx.options());
  // The old config's ssl sockets by context, address and port (the last one of each).
  std::map<std::tuple<model::context_kind, std::string_view, int>, const model::listen_socket*>
      old_sockets;
  for (const auto& cand : old->sockets)
    if (cand.ssl) old_sockets[{cand.context, cand.address, cand.port}] = &cand;
  for (const auto& [di, sockets] : ssl_sockets_by_default(m)) {
    const model::server& d = m.servers[di];
    for (const auto* k : sockets) {
      // The same socket in the old config.
      const auto found = old_sockets.find({k->context, k->address, k->port});
      if (found == old_sockets.end()) continue;
      const model::listen_socket* ok = found->second;
      const model::server& od = old->servers[ok->default_server];
      const auto* old_keys = od.get("ssl_session_ticket_key");
      if (!old_keys || old_keys->values.empty() || old_keys->values.front().args.empty()) continue;
      if (!model::is_on(od.get("ssl_session_tickets"))) continue;
      // No ticket is issued here now: outstanding ones are refused whichever keys are listed.
      if (!issues_tickets(m, di, {k})) continue;
      key_id encrypting = identify(old_ctx, std::string(old_keys->values.front().args.front()));
      const auto* new_keys = d.get("ssl_session_ticket_key");
      bool kept = false;
      if (new_keys)
        for (const auto& occ : new_keys->values)
          if (!occ.args.empty() &&
              same_key(identify(ctx, std::string(occ.args.front())), encrypting))
            kept = true;
      if (kept) continue;
      auto f =
          ctx.make(id, engine::severity::error,
                   "on " + k->name() + " the key that encrypted tickets under the baseline (\"" +
                       encrypting.path +
                       "\") is no longer listed: every outstanding ticket "
                       "becomes undecryptable and every client does a full handshake",
                   new_keys && new_keys->values.front().where ? new_keys->values.front().where
                                                              : default_anchor(d));
      f.facts.push_back(setting_evidence(ctx, d, "ssl_session_ticket_key"));
      f.facts.push_back(
          {"baseline encrypting key", encrypting.path,
           encrypting.fingerprint.empty() ? "compared by path" : "compared by content fingerprint",
           old_ctx.where(old_keys->values.front().where)});
      f.fix =
          "# keep the old encrypting key after the new one:\nssl_session_ticket_key NEW.key;\n"
          "ssl_session_ticket_key " +
          std::string(old_keys->values.front().args.front()) + ";";
      f.server = server_label(ctx, d);
      f.ports.push_back(k->port);
      // Unlike the key file facts, this one a session saved under the baseline can show.
      f.question = engine::probe_question::saved_session_resumes;
      // Mechanical fix: list the old encrypting key right after the new first key (decrypt only).
      if (new_keys && new_keys->values.front().where) {
        const std::string old_arg(old_keys->values.front().args.front());
        const bool same_prefix = old->cfg && m.cfg && old->cfg->conf_prefix == m.cfg->conf_prefix;
        const std::string path = same_prefix ? old_arg : encrypting.path;
        if (auto e = engine::insert_after(*m.cfg, *new_keys->values.front().where,
                                          "ssl_session_ticket_key " + path +
                                              ";  # ngxtls: keeps outstanding tickets resumable"))
          f.edits.push_back(*e);
      }
      out.push_back(std::move(f));
      break;
    }
  }
}

void check(const engine::context& ctx, engine::finding_list& out) {
  check_files(ctx, out);
  check_baseline(ctx, out);
}

}  // namespace

engine::rule ticket_key_rotation() {
  engine::rule r{id, engine::severity::error,
                 "Ticket key files that break resumption on rotation, have the wrong size, or leak",
                 doc, check};
  r.costs_resumption = true;
  return r;
}

}  // namespace ngxtls::rules
