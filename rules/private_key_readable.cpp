// private-key-readable: a private key (or its password file) that every local user can read.

#include <sys/stat.h>

#include <set>

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "private-key-readable";

constexpr const char* doc = R"(# private-key-readable

## What it flags
An `ssl_certificate_key` file, or an `ssl_password_file`, that others (not the owner, not the
group) may read: mode bits `o+r` (0004). Warning. A group-readable key (Debian's usual 0640
root:ssl-cert) is not flagged. Only the mode is read, never the key. Files that cannot be
inspected here are left to `file-not-inspected`; `data:` and `engine:` keys have no file mode.

## Why it matters
nginx reads its keys as root before it drops privileges, so the key file needs no more than
0600 (or 0640 for a key group). A world-readable key lets every local account, and any process
that escapes a worker, impersonate the server and decrypt recorded TLS 1.2 RSA key exchanges.
The same holds for the password file that unlocks an encrypted key.

## Example
```nginx
ssl_certificate     /etc/nginx/tls/site.pem;
ssl_certificate_key /etc/nginx/tls/site.key;   # -rw-r--r--
```

## Fix
`chmod 600 /etc/nginx/tls/site.key` (or `chmod 640` with a dedicated group), and keep the
directory closed too.

## How the prober confirms it
It cannot: file modes are not visible on the wire.

## Source
nginx reads keys in the master process (src/event/ngx_event_openssl.c, ngx_ssl_certificate),
before workers switch to `user`; stat(2) st_mode.
)";

// Mode bits of a regular file, or nullopt when it cannot be stat'ed here.
std::optional<unsigned> mode_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<unsigned>(st.st_mode & 07777);
}

std::string octal(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

void check(const engine::context& ctx, engine::finding_list& out) {
  std::set<std::string> seen;  // one finding per file, at its first use
  for (const auto& s : ctx.model().servers) {
    if (!s.has_ssl) continue;
    std::vector<std::pair<std::string, const model::occurrence*>> files;
    for (const auto& c : certificates_of(ctx, s))
      if (c.key && !c.key_path.empty() && c.key_path.rfind("engine:", 0) != 0)
        files.push_back({c.key_path, c.key});
    if (const auto* pw = s.get("ssl_password_file"))
      if (!pw->values.empty() && !pw->values.back().args.empty())
        files.push_back({ctx.resolve(pw->values.back().args.front()), &pw->values.back()});
    for (const auto& [path, occ] : files) {
      if (!seen.insert(path).second) continue;
      auto mode = mode_of(path);
      if (!mode || !(*mode & 0004)) continue;
      const bool password = occ->where && occ->where->name == "ssl_password_file";
      auto f = ctx.make(id, engine::severity::warning,
                        std::string(password ? "password file \"" : "private key \"") + path +
                            "\" is readable by every local user (mode " + octal(*mode) +
                            "): whoever reads it can impersonate this server",
                        occ->where);
      f.facts.push_back({"mode", octal(*mode), "file", ctx.where(occ->where)});
      f.fix = "# chmod 600 " + path + "   (or 640 with a dedicated group)";
      f.server = server_label(ctx, s);
      out.push_back(std::move(f));
    }
  }
}

}  // namespace

engine::rule private_key_readable() {
  return {id, engine::severity::warning,
          "Private key or password file readable by every local user", doc, check};
}

}  // namespace ngxtls::rules
