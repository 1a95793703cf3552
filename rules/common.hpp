#pragma once
// Helpers shared by the rule files: evidence from effective values, socket grouping.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/values.hpp"
#include "engine/engine.hpp"
#include "engine/file_facts.hpp"

namespace ngxtls::rules {

/// Evidence for one effective setting of a server: "name", its arguments joined by spaces,
/// its origin ("server" / "http" / "stream" / "default") and location. An unset directive
/// without default gives value "(not set)".
engine::evidence setting_evidence(const engine::context& ctx, const model::server& s,
                                  std::string_view name);

/// model::server_label of the context's model: "example.com" (first server_name), or
/// "server at FILE:LINE" when it has none.
std::string server_label(const engine::context& ctx, const model::server& s);

/// The ssl listen sockets grouped by their default server: default server index ->
/// the sockets it is default for (docs/nginx-facts.md#default-server-rules: those sockets take its
/// cache and keys).
std::map<std::size_t, std::vector<const model::listen_socket*>> ssl_sockets_by_default(
    const model::model& m);

/// True when a handshake on `sockets` (whose default server is `default_server`) can end with a
/// session ticket: some server that completes handshakes there (the default server unless it
/// has `ssl_reject_handshake on`, and every name-based server without it) has
/// `ssl_session_tickets` on. nginx's SNI callback replaces the connection's options with the
/// chosen server's, SSL_OP_NO_TICKET included (ngx_ssl_servername / ngx_http_ssl_servername).
bool issues_tickets(const model::model& m, std::size_t default_server,
                    const std::vector<const model::listen_socket*>& sockets);

/// For each server of `m` (by index): true when an ssl socket it listens on issues tickets
/// (issues_tickets()). One pass over the sockets.
std::vector<bool> servers_on_ticket_sockets(const model::model& m);

/// "*:443, [::]:443".
std::string socket_names(const std::vector<const model::listen_socket*>& sockets);

/// True when the assumed OpenSSL and nginx can speak TLS 1.3 and the setting enables it.
bool tls13_enabled(const model::model& m, const model::server& s);

/// Where a finding caused by an absent directive points: the server's first `listen ... ssl`,
/// else the server directive itself.
const config::directive* default_anchor(const model::server& s);

/// True when the argument names a file chosen at run time (`$variable`) or inline (`data:`),
/// which cannot be inspected statically.
bool dynamic_path(std::string_view arg);

/// Every (default server, name-based server, socket) triple: a server on an ssl socket that is
/// not that socket's default server, once per socket, in socket order
/// (docs/nginx-facts.md#default-server-rules).
struct sni_pair {
  std::size_t default_server;
  std::size_t name_based;
  const model::listen_socket* socket;
};
std::vector<sni_pair> name_based_servers(const model::model& m);

/// True when nginx `v` negotiates the protocol of a handshake with the server the SNI selects
/// (from 1.29.2); before, with the socket's default server's ssl_protocols
/// (docs/nginx-facts.md#default-server-rules).
bool sni_selects_protocols(const model::version& v);

/// True when no handshake to server `server` uses its own ssl_protocols: before 1.29.2 it is a
/// name-based server on every ssl socket it listens on, so the default servers' ssl_protocols
/// apply (and are judged there).
bool protocols_from_default_servers(const model::model& m, std::size_t server);

/// True when both settings hold the same arguments (all occurrences), or both are unset.
bool same_value(const model::setting* a, const model::setting* b);

/// An nginx time ("5m", "1h30m", "86400", "1d") in seconds: the one time parser of the tree,
/// nginx's own reading (config/values.hpp).
using config::parse_time_s;

/// Where a finding about `name` in `s` points: the directive that set it (server, or the
/// inherited http/stream one), else the server's first `listen ... ssl`: a default has no directive
/// of its own.
const config::directive* anchor_of(const model::server& s, std::string_view name);

/// Every directive in `block` and its nested blocks, depth first.
void walk(config::list<config::directive> block,
          const std::function<void(const config::directive&)>& visit);

/// The `http` or `stream` block directive that holds server `s`, or null.
const config::directive* enclosing_block(const model::model& m, const model::server& s);

/// True when the assumed OpenSSL major.minor differs from the libssl linked here, so that
/// expanding cipher strings or curve lists here may not match the deployed host.
bool openssl_differs(const model::model& m);

/// One certificate file of a server, paired with its key file by position (nginx pairs the
/// n-th ssl_certificate with the n-th ssl_certificate_key, ngx_ssl_certificates).
struct certificate_ref {
  std::string_view arg;                     ///< as written (a view into the config)
  std::string path;                         ///< resolved against the conf prefix
  const model::occurrence* cert = nullptr;  ///< the ssl_certificate occurrence
  const model::occurrence* key = nullptr;   ///< its ssl_certificate_key, or null
  std::string key_path;                     ///< resolved key path, or ""
  /// read_chain(path), looked up once per run: the certificate rules ask for it per server,
  /// and each lookup took the file-facts lock.
  const std::vector<tls::certificate_info>* chain = nullptr;
};
/// The certificates of a TLS server whose paths are static (no `$variable`, no `data:`).
/// Computed once per engine run (shared by the certificate rules); the reference lives as
/// long as the run's context.
const std::vector<certificate_ref>& certificates_of(const engine::context& ctx,
                                                    const model::server& s);

/// The leaf and chain of a certificate file when it could be read, else null (a missing or
/// unreadable file is reported by `file-not-inspected`).
const std::vector<tls::certificate_info>* read_chain(const engine::context& ctx,
                                                     const std::string& path);

/// True when the server's own block ends every request with `return 444` before any location
/// or `if` is reached: nginx closes the connection without a response (NGX_HTTP_CLOSE), so no
/// header such a server configures is ever sent. A server-level `rewrite`, `if` or `break`
/// before it may answer, move the request or stop the server's rewrite directives first, and
/// makes this false.
bool closes_every_request(const model::server& s);

/// The fix of a socket on which no client can resume because `ssl_session_tickets` is off and
/// there is no session cache: the lines to add (docs/nginx-facts.md#tickets-off-tls13).
inline constexpr const char* shared_cache_fix =
    "ssl_session_cache shared:SSL:10m;  # stateful resumption for TLS 1.2 and 1.3, this host\n"
    "ssl_session_timeout 1h;";

/// Adds to `f` the mechanical fix for default server `d` that has no session cache: replaces
/// its explicit `ssl_session_cache none|off`, else inserts a `shared:` cache after
/// `tickets_off` (the `ssl_session_tickets off` that causes the finding; nothing when null).
/// The zone name is one no other ssl_session_cache of the config uses (a zone declared twice
/// with different sizes is an nginx error), the same for every finding of a run and context.
void add_shared_cache_edit(const engine::context& ctx, const model::server& d,
                           const config::directive* tickets_off, engine::finding& f);

/// The `server_name` directive of a server (first one), or null.
const config::directive* server_name_directive(const model::server& s);

}  // namespace ngxtls::rules
