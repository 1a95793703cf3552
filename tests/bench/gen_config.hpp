#pragma once
// Deterministic generator of large, realistic nginx configurations for the lint benches
// (speed and scale). Header-only so that every bench_*.cpp can include it without
// touching the bench glob in tests/CMakeLists.txt; `bench_lint --write FILE MB` writes one.
//
// The output is one nginx.conf: `load_module` lines for ndk + lua (Debian's
// libnginx-mod-http-lua), `events {}`, and one `http {}` holding upstreams, `map` blocks and
// about 750 TLS `server` blocks per MB (15,000 at 20 MB), each with listen 443 ssl,
// server_name, certificate/key, ssl_protocols/ciphers/session settings, add_header, several
// `location` blocks (prefix, exact, regex), `if`, `rewrite` with regexes and quoted strings,
// some `*_by_lua_block` bodies and comments. Same options -> same bytes. `nginx -t` (1.22)
// accepts it when the certificate files exist (the bench makes them with tls::make_pki).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ngxtls::bench {

/// One certificate/key pair the generated servers reference (many servers share one).
struct cert_pair {
  std::string cert;  ///< path for ssl_certificate (absolute, or relative to the config's dir)
  std::string key;   ///< path for ssl_certificate_key
  std::string domain = "example.com";  ///< servers using this pair are named NAME.domain (the
                                       ///< certificate should hold *.domain)
};

/// What to generate.
struct gen_options {
  std::size_t target_bytes = 20u << 20;  ///< stop adding servers once the output reaches this size
  std::vector<cert_pair> certs;          ///< at least one; server i uses certs[i % size]
  std::string work_dir = "/tmp";  ///< directory for error_log and pid (must exist for nginx -t)
  bool lua = true;                ///< emit load_module lines and *_by_lua_block bodies
  std::uint64_t seed = 6;         ///< PRNG seed: same seed and options -> same bytes
  /// Every server carries the mistakes the rules look for (old protocols, weak ciphers, a
  /// session timeout and tickets a name-based server cannot change), not a few percent.
  bool findings_everywhere = false;
  /// Per 40 servers, one `map` with `hostnames` and this many host keys (`*.x`, `.x`, exact).
  std::size_t hostname_keys = 0;
  /// When set, an absolute directory: each server takes its TLS options from
  /// `include DIR/options-ssl-nginx.conf` (certbot's shared file) instead of its own lines,
  /// and `location /api/` includes DIR/proxy-headers.conf; snippet_files() gives the files.
  std::string snippet_dir;
  /// Every TLS server listens on an address of its own (10.x.y.z:443, and a third of them on
  /// [2001:db8::N]:443 too), as hosting panels set up IP-based sites: as many listen sockets
  /// as servers, each its own default server.
  bool own_address = false;
  /// Extra `location` blocks per server (prefix, exact and regex ones, some nested), as API
  /// gateways and large applications are written; 0 for the usual three or four.
  std::size_t extra_locations = 0;
};

/// The files generate_config()'s includes name when o.snippet_dir is set: path -> text, in
/// the order nginx opens them.
inline std::vector<std::pair<std::string, std::string>> snippet_files(const std::string& dir) {
  return {{dir + "/options-ssl-nginx.conf",
           "# certbot's shared TLS options\n"
           "ssl_session_cache shared:le_nginx_SSL:10m;\n"
           "ssl_session_timeout 1440m;\n"
           "ssl_session_tickets off;\n"
           "ssl_protocols TLSv1.2 TLSv1.3;\n"
           "ssl_prefer_server_ciphers off;\n"
           "ssl_ciphers \"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
           "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384\";\n"},
          {dir + "/proxy-headers.conf",
           "proxy_set_header Host $host;\n"
           "proxy_set_header X-Real-IP $remote_addr;\n"
           "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n"
           "proxy_set_header X-Forwarded-Proto $scheme;\n"}};
}

namespace detail {

/// splitmix64: small, fast and the same on every platform (std:: distributions are not).
struct prng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform-ish in [0, n).
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  bool chance(unsigned percent) { return below(100) < percent; }
};

inline const char* pick(prng& r, const std::vector<const char*>& v) {
  return v[r.below(v.size())];
}

}  // namespace detail

/// The configuration text for `o` (deterministic). Throws std::invalid_argument when
/// o.certs is empty.
inline std::string generate_config(const gen_options& o) {
  using detail::pick;
  if (o.certs.empty()) throw std::invalid_argument("generate_config: no certificates");
  detail::prng r{o.seed};
  static const std::vector<const char*> words = {
      "shop",  "api",    "blog",  "mail", "static", "cdn",  "app", "portal", "auth", "docs",
      "media", "status", "admin", "pay",  "search", "news", "git", "wiki",   "img",  "m"};
  static const std::vector<const char*> protocols = {"TLSv1.3", "TLSv1 TLSv1.1 TLSv1.2", "TLSv1.2"};
  static const std::vector<const char*> ciphers = {
      "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
      "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
      "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384",
      "HIGH:!aNULL:!MD5", "EECDH+AESGCM:EDH+AESGCM", "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!SHA1",
      "HIGH:!aNULL:!MD5:!3DES:!CAMELLIA"};
  static const std::vector<const char*> timeouts = {"5m", "10m", "1h", "1d", "4h"};
  static const std::vector<const char*> user_agents = {
      "~*googlebot",       "~*bingbot", "~*curl/",
      "~*python-requests", "~*Slurp",   "\"~*Mozilla/5\\.0 \\(compatible\""};

  std::string out;
  out.reserve(o.target_bytes + (64u << 10));
  out += "# Generated by tests/bench/gen_config.hpp (ngxtls): deterministic, seed " +
         std::to_string(o.seed) + "\n";
  if (o.lua) {
    out +=
        "load_module /usr/share/nginx/modules/ndk_http_module.so;\n"
        "load_module /usr/share/nginx/modules/ngx_http_lua_module.so;\n";
  }
  out +=
      "worker_processes 2;\n"
      "pid " +
      o.work_dir +
      "/nginx.pid;\n"
      "error_log " +
      o.work_dir +
      "/error.log warn;\n\n"
      "events {\n    worker_connections 1024;\n}\n\n"
      "http {\n"
      "    # big fleets need bigger hashes than nginx's defaults\n"
      "    server_names_hash_max_size 131072;\n"
      "    server_names_hash_bucket_size 128;\n"
      "    variables_hash_max_size 16384;\n"
      "    map_hash_bucket_size 128;\n"
      "    sendfile on;\n    tcp_nopush on;\n    keepalive_timeout 65;\n"
      "    default_type application/octet-stream;\n"
      "    log_format main '$remote_addr - $remote_user [$time_local] \"$request\" '\n"
      "                    '$status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"';\n"
      "    access_log off;\n"
      "    ssl_session_cache shared:SSL:50m;\n"
      "    ssl_session_timeout 1d;\n"
      "    ssl_prefer_server_ciphers on;\n"
      "    gzip on;\n    gzip_types text/plain text/css application/json "
      "application/javascript;\n\n";
  if (o.lua) {
    out +=
        "    lua_shared_dict limits 10m;\n"
        "    init_by_lua_block {\n"
        "        -- runs once at load; strings with braces { } and quotes \" ' must not confuse a "
        "parser\n"
        "        local greeting = [[hello {world}]]\n"
        "        BLOCKED = { [\"10.0.0.1\"] = true, [\"10.0.0.2\"] = true }\n"
        "    }\n\n";
  }
  constexpr std::size_t upstreams = 64;
  for (std::size_t u = 0; u < upstreams; ++u) {
    out += "    upstream backend_" + std::to_string(u) + " {\n";
    const std::size_t n = 1 + r.below(3);
    for (std::size_t k = 0; k < n; ++k) {
      out += "        server 127.0." + std::to_string(u / 8) + "." + std::to_string(1 + k) + ":" +
             std::to_string(8000 + u) +
             (k == 0 ? " weight=" + std::to_string(1 + r.below(5)) : " backup") + ";\n";
    }
    out += "        keepalive 16;\n    }\n";
  }
  out += "\n";

  std::size_t server = 0;
  std::size_t maps = 0;
  while (out.size() < o.target_bytes) {
    if (server % 40 == 0) {
      // http-level maps: user-agent classes, redirects, per-host backends
      const std::string m = std::to_string(maps++);
      out +=
          "    # map " + m + "\n    map $http_user_agent $is_bot_" + m + " {\n        default 0;\n";
      for (std::size_t k = 0; k < 4; ++k)
        out += std::string("        ") + pick(r, user_agents) + " 1;\n";
      out += "    }\n    map $request_uri $redirect_" + m + " {\n        default \"\";\n";
      for (std::size_t k = 0; k < 6; ++k) {
        out += "        /old-" + m + "-" + std::to_string(k) + " /new/" +
               std::to_string(r.below(1000)) + ";\n";
      }
      out += "        \"~^/legacy/(?<rest>.*)$\" /modern/$rest;\n    }\n\n";
      if (o.hostname_keys > 0) {
        out += "    map $host $pool_" + m + " {\n        hostnames;\n        default backend_0;\n";
        for (std::size_t k = 0; k < o.hostname_keys; ++k) {
          const std::string name = std::string(pick(r, words)) + std::to_string(k) + "-" + m;
          const char* shape[] = {"*.", ".", ""};
          out += std::string("        ") + shape[k % 3] + name + ".example.net backend_" +
                 std::to_string(r.below(upstreams)) + ";\n";
        }
        out += "    }\n\n";
      }
    }
    const std::string id = std::to_string(server);
    // Most sites are clean, as in a maintained fleet; a few percent carry the mistakes the
    // rules look for (odd protocols or ciphers, settings a name-based server cannot change).
    const cert_pair& cp = o.certs[server % o.certs.size()];
    const std::string host = std::string(pick(r, words)) + "-" + id + "." + cp.domain;
    const std::string up = "backend_" + std::to_string(r.below(upstreams));
    const std::string m = std::to_string(maps - 1);

    out += "    # site " + id + ": " + host + "\n    server {\n";
    if (o.own_address) {
      out += "        listen 10." + std::to_string(1 + server / 65025) + "." +
             std::to_string(server / 255 % 255) + "." + std::to_string(1 + server % 255) +
             ":443 ssl;\n";
      if (server % 3 == 0) {
        char v6[48];
        std::snprintf(v6, sizeof v6, "[2001:db8::%zx]", server + 1);
        out += std::string("        listen ") + v6 + ":443 ssl;\n";
      }
    } else {
      out += "        listen 443 ssl" + std::string(server == 0 ? " default_server" : "") + ";\n";
      if (r.chance(50))
        out += "        listen [::]:443 ssl" + std::string(server == 0 ? " default_server" : "") +
               ";\n";
    }
    out +=
        "        server_name " + host + (r.chance(50) ? " www" + id + "." + cp.domain : "") + ";\n";
    out +=
        "        ssl_certificate " + cp.cert + ";\n        ssl_certificate_key " + cp.key + ";\n";
    const unsigned clean = o.findings_everywhere ? 0 : 95;
    const unsigned odd = o.findings_everywhere ? 100 : 3;
    if (!o.snippet_dir.empty()) {
      out += "        include " + o.snippet_dir + "/options-ssl-nginx.conf;\n";
    } else {
      out += std::string("        ssl_protocols ") +
             (r.chance(clean)         ? "TLSv1.2 TLSv1.3"
              : o.findings_everywhere ? "TLSv1 TLSv1.1 TLSv1.2"
                                      : pick(r, protocols)) +
             ";\n";
      out += std::string("        ssl_ciphers ") +
             (r.chance(clean)         ? ciphers[0]
              : o.findings_everywhere ? "ALL:RC4:3DES"
                                      : pick(r, ciphers)) +
             ";\n";
      if (r.chance(odd))
        out += std::string("        ssl_session_timeout ") + pick(r, timeouts) + ";\n";
      if (r.chance(odd)) out += "        ssl_session_tickets off;\n";
    }
    out +=
        "        add_header Strict-Transport-Security \"max-age=63072000; includeSubDomains\" "
        "always;\n";
    out += "        root /var/www/" + host + "/public;\n";
    if (r.chance(40))
      out += "        client_max_body_size " + std::to_string(1 + r.below(100)) + "m;\n";
    if (r.chance(50))
      out += "\n        if ($redirect_" + m + ") {\n            return 301 $redirect_" + m +
             ";\n        }\n";
    if (r.chance(50))
      out += "        if ($host != \"" + host + "\") {\n            return 301 https://" + host +
             "$request_uri;\n        }\n";
    if (r.chance(50))
      out += "        rewrite ^/old/(.*)$ /new/$1 permanent;\n";
    else {
      out += "        rewrite \"^/blog/(\\d{4})/(\\d{2})/(.*)$\" /articles/$1-$2/$3 last;\n";
    }
    out += "\n        location / {\n            try_files $uri $uri/ /index.html;\n        }\n";
    out +=
        "        location = /health {\n            access_log off;\n            return 200 "
        "\"ok\\n\";\n"
        "        }\n";
    out += "        location /api/ {\n            proxy_pass http://" + up + ";\n" +
           (o.snippet_dir.empty()
                ? std::string(
                      "            proxy_set_header Host $host;\n"
                      "            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n")
                : "            include " + o.snippet_dir + "/proxy-headers.conf;\n") +
           "            if ($is_bot_" + m +
           ") {\n                return 403;\n            }\n"
           "        }\n";
    if (r.chance(50))
      out +=
          "        location ~* \\.(?:css|js|png|jpe?g|gif|svg|woff2?)$ {\n"
          "            expires 30d;\n            add_header Cache-Control 'public, immutable';\n"
          "        }\n";
    for (std::size_t k = 0; k < o.extra_locations; ++k) {
      const std::string n = std::to_string(k);
      switch (k % 4) {
        case 0:
          out += "        location /app" + n + "/ {\n            proxy_pass http://" + up +
                 ";\n            proxy_read_timeout " + std::to_string(10 + r.below(50)) +
                 "s;\n        }\n";
          break;
        case 1:
          out += "        location = /static" + n + ".html {\n            expires 1h;\n        }\n";
          break;
        case 2:
          out += "        location ~ ^/v" + n +
                 "/(?<rest>.*)$ {\n            rewrite ^ /api/$rest break;\n"
                 "            proxy_pass http://" +
                 up + ";\n        }\n";
          break;
        default:
          out += "        location /files" + n + "/ {\n            root /srv/" + host +
                 ";\n            location ~ \\.php$ {\n                deny all;\n"
                 "            }\n        }\n";
      }
    }
    if (o.lua && r.chance(20)) {
      out +=
          "        location /lua/ {\n"
          "            access_by_lua_block {\n"
          "                -- deny listed clients; a '}' in a comment and \"{\" in a string\n"
          "                if BLOCKED[ngx.var.remote_addr] then return ngx.exit(403) end\n"
          "            }\n"
          "            content_by_lua_block {\n"
          "                local t = { site = \"" +
          host + "\", n = " + id +
          " }\n"
          "                ngx.header[\"Content-Type\"] = \"text/plain\"\n"
          "                ngx.say(\"hello from \", t.site, [[ {braces} ]], t.n)\n"
          "            }\n"
          "        }\n";
    }
    out += "    }\n\n";
    ++server;
  }
  out += "}\n";
  return out;
}

/// A generated config cut into files: the main file includes `dir/sites/*.conf` inside
/// `http`, and each site file holds `servers_per_file` servers (and the maps between them).
struct split_config {
  std::string main;                                        ///< the main file's text
  std::vector<std::pair<std::string, std::string>> sites;  ///< path -> text, sorted by path
};

/// Cuts `text` (generate_config's output) at its `    # site N` lines. `dir` is an absolute
/// directory; site files are named dir/sites/NNNNNN.conf.
inline split_config split_into_sites(const std::string& text, const std::string& dir,
                                     std::size_t servers_per_file) {
  split_config out;
  const std::string mark = "\n    # site ";
  std::size_t first = text.find(mark);
  // The maps before the first server belong with it: cut at the start of its map comment.
  const std::size_t maps = text.rfind("\n    # map ", first);
  if (maps != std::string::npos) first = maps;
  const std::size_t end = text.rfind("}\n");  // closes http
  if (first == std::string::npos || end == std::string::npos || end < first)
    throw std::invalid_argument("split_into_sites: not generate_config's output");
  out.main =
      text.substr(0, first + 1) + "    include " + dir + "/sites/*.conf;\n" + text.substr(end);
  std::size_t at = first + 1;
  while (at < end) {
    std::size_t cut = at;
    for (std::size_t k = 0; k < servers_per_file && cut < end; ++k) {
      const std::size_t next = text.find(mark, cut + 1);
      cut = next == std::string::npos || next > end ? end : next + 1;
    }
    char name[32];
    std::snprintf(name, sizeof name, "/sites/%06zu.conf", out.sites.size());
    out.sites.emplace_back(dir + name, text.substr(at, cut - at));
    at = cut;
  }
  return out;
}

/// What `nginx -T` prints for `main_path` with `c`'s files (each after its marker line and
/// followed by a line feed, the main file first, then the glob's matches in order).
inline std::string dump_of(const std::string& main_path, const split_config& c) {
  std::string out = "# configuration file " + main_path + ":\n" + c.main + "\n";
  for (const auto& [path, text] : c.sites)
    out += "# configuration file " + path + ":\n" + text + "\n";
  return out;
}

}  // namespace ngxtls::bench
