#pragma once
// ngxtls harden: hardened nginx TLS snippets from a profile (rules/profiles/*.toml), aware of
// the target nginx and OpenSSL versions, with session resumption done right (tickets never
// off; shared ticket keys and a rotation that never breaks resumption in fleet mode).
// The result is structured (each line with its reason); src/report formats it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harden/profile.hpp"
#include "model/version.hpp"

namespace ngxtls::harden {

/// Where session tickets must resume.
enum class tickets_mode {
  fleet,  ///< every host behind a name: identical ssl_session_ticket_key files
          ///< (docs/nginx-facts.md#ticket-keys-per-instance, #ticket-key-rotation)
  host,   ///< this host only: nginx's own keys (in the shared cache zone from nginx 1.23.2)
};

/// OCSP stapling choice (--ocsp).
enum class ocsp_mode {
  automatic,  ///< staple only when the certificate (--cert) names an OCSP responder
              ///< (docs/nginx-facts.md#ocsp-stapling-quiet)
  on,         ///< always emit stapling, with a comment naming what it needs
  off,        ///< never emit stapling
};

/// "fleet"/"host", "auto"/"on"/"off".
std::string to_string(tickets_mode m);
std::string to_string(ocsp_mode m);

/// One backend pool nginx proxies to over TLS (`--upstream NAME=ADDRESS`, repeatable: the same
/// NAME again adds a server to its block).
struct upstream_options {
  std::string name;                  ///< the upstream block's name: `proxy_pass https://NAME`
  std::vector<std::string> servers;  ///< `host:port`, `[v6]:port` or `unix:PATH`, in order
  /// proxy_ssl_name: the name the backend's certificate holds and SNI carries; "" = the first
  /// server's host name when it is one, else NAME (nginx's own default, `$proxy_host`).
  std::string ssl_name;
};

/// What to generate for.
struct harden_options {
  std::string profile = "intermediate";              ///< a name of profile_names()
  model::version nginx = model::newest_known_nginx;  ///< target nginx
  model::version openssl{3, 0, 0};                   ///< OpenSSL the target nginx runs with
  std::string
      versions_source;  ///< why these versions, e.g. "--nginx-version; nginx -V" (shown as is)
  /// nullopt: fleet when ticket_key_dir is set, else host.
  std::optional<tickets_mode> tickets;
  /// Directory of the ticket key files current.key (encrypts) and previous.key (decrypts only);
  /// made absolute. Required for fleet mode.
  std::string ticket_key_dir;
  ocsp_mode ocsp = ocsp_mode::automatic;
  std::string cert_file;            ///< ssl_certificate (leaf, then chain); "" = a placeholder path
  std::string key_file;             ///< ssl_certificate_key; "" = a placeholder path
  std::string trusted_certificate;  ///< ssl_trusted_certificate for stapling; "" = a placeholder
  std::string resolver = "127.0.0.1";  ///< resolver for the OCSP responder host
  /// `listen` addresses of the server block (each gets `ssl`, and `http2` before nginx 1.25.1).
  std::vector<std::string> listen = {"443", "[::]:443"};
  std::string listen_flags;  ///< extra listen parameters, e.g. "reuseport" (empty: none)
  /// Sessions the shared cache must hold (about 4,000 per MB, nginx docs for
  /// ssl_session_cache); nullopt = the profile's expected_sessions.
  std::optional<std::int64_t> expected_sessions;
  /// TLS backends: an `upstream` block and a `location` proxying to it for each.
  std::vector<upstream_options> upstreams;
  /// proxy_ssl_trusted_certificate: the CA(s) that issued the backends' certificates; "" = a
  /// placeholder path.
  std::string upstream_trusted_certificate;
  /// `keepalive N` of each upstream block: idle connections each worker keeps.
  int upstream_keepalive = 16;
};

/// One line of the snippet.
struct snippet_line {
  std::string context;    ///< "http" (shared by every server, so the default server has it too,
                          ///< docs/nginx-facts.md#default-server-rules) or "server"
  std::string directive;  ///< one nginx directive with its ';'; empty for a comment-only line
  std::string reason;     ///< short why, shown as a comment
};

/// An upstream block and the location that proxies to it over TLS.
struct snippet_upstream {
  std::string name;                          ///< the block's name
  std::string location;                      ///< the location's path ("/", "/NAME/")
  std::vector<snippet_line> block;           ///< lines of `upstream NAME { ... }`
  std::vector<snippet_line> location_lines;  ///< lines of `location PATH { ... }`
};

/// One step of the ticket key rotation procedure (fleet mode).
struct rotation_step {
  std::string title;                  ///< e.g. "2. deploy it decrypt-only everywhere"
  std::vector<std::string> commands;  ///< shell commands, in order
  std::string why;                    ///< what makes the step safe
};

/// The generated snippet and everything said about it.
struct snippet {
  std::string profile_name, guideline, guideline_url;
  model::version nginx, openssl;
  std::string versions_source;  ///< as in harden_options
  tickets_mode tickets = tickets_mode::host;
  ocsp_mode ocsp = ocsp_mode::automatic;
  bool stapling = false;                    ///< stapling lines were emitted
  std::string ticket_key_dir;               ///< absolute; empty in host mode
  std::int64_t session_cache_mb = 0;        ///< size of the shared cache zone, MB
  std::vector<snippet_line> lines;          ///< http lines, then server lines
  std::vector<snippet_upstream> upstreams;  ///< TLS backends (--upstream), in the order given
  std::vector<std::string> warnings;        ///< things the user must act on or accept
  std::vector<std::string> notes;           ///< context (omissions, version choices)
  std::vector<rotation_step> rotation;      ///< fleet mode: the key procedure; empty otherwise
  std::vector<difference> differences;      ///< where the snippet departs from the guideline
};

/// Name of the shared session cache zone the snippet declares.
inline constexpr const char* session_zone = "tls_sessions";

/// Generates the snippet. Reads --cert (read_certificate_chain, for its OCSP URL) and the
/// ticket key files (size and mode only; key bytes are never read into the output).
/// Version rules: `http2 on` from nginx 1.25.1, else `listen ... http2` (from 1.9.5);
/// `ssl_conf_command` only from nginx 1.19.4; TLSv1.3 only with nginx >= 1.13.0 and OpenSSL >=
/// 1.1.1; each curve only from its profile min_openssl (X25519MLKEM768: OpenSSL 3.5).
/// Throws ngxtls::usage_error for an unknown profile, fleet mode without a key directory, or a
/// profile the target cannot serve (modern without TLS 1.3), a path holding a control
/// character (it would end the snippet's comment lines) or a certificate or key path holding
/// `$` (nginx reads variables there: `[emerg] unknown "x" variable`); ngxtls::input_error when
/// --cert cannot be read. Each of `upstreams` adds an upstream block (zone, servers, keepalive,
/// keepalive_requests and keepalive_timeout from nginx 1.15.3) and a location with TLS to the
/// backend (HTTP/1.1; `Connection ""` before nginx 1.30, which sends none; session reuse;
/// verification with a trusted certificate, proxy_ssl_name and SNI; the profile's protocols).
snippet generate(const harden_options& options);

/// The backends of `--upstream NAME=ADDRESS` (each argument as given; a NAME given again adds a
/// server) with `--upstream-ssl-name NAME=HOST` (proxy_ssl_name of NAME). NAME: letters, digits,
/// `.`, `_`, `-` (it is the host of `proxy_pass https://NAME`); ADDRESS: `host:port`,
/// `[v6]:port` or `unix:/PATH` (a port is required: an upstream server without one is port
/// 80). Throws ngxtls::usage_error naming the argument and what is wrong with it.
std::vector<upstream_options> parse_upstreams(const std::vector<std::string>& upstream_args,
                                              const std::vector<std::string>& ssl_name_args);

/// `value` as one nginx token that reads back as `value`: as it is when it holds nothing nginx's
/// tokenizer treats specially (white space, `;`, `{`, `}`, quotes, `\`, `#`, `$`), else in
/// double quotes with `"` and `\` escaped (ngx_conf_read_token unescapes `\"` and `\\`).
/// `$` stays literal only in directives that take no variables (ssl_session_ticket_key,
/// ssl_trusted_certificate); generate() refuses it where nginx reads variables.
std::string nginx_quote(const std::string& value);

/// `value` as one POSIX shell word (single quotes when it holds anything but
/// `A-Za-z0-9_./:@%+=,-`), for the rotation commands.
std::string shell_quote(const std::string& value);

/// Shared cache size in MB for `sessions` (about 4,000 sessions per MB; at least 1).
std::int64_t cache_size_mb(std::int64_t sessions);

}  // namespace ngxtls::harden
