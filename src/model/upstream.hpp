#pragma once
// nginx as a TLS client: every proxy_pass, grpc_pass and uwsgi_pass to TLS (https://, grpcs://,
// suwsgi://) in http locations, and every stream proxy_pass with `proxy_ssl on`, resolved into
// the upstream TLS settings nginx runs that location with, the upstream block it names and how
// its connections are kept (docs/nginx-facts.md#upstream-tls).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/tree.hpp"

namespace ngxtls::model {

struct model;
struct server;
enum class context_kind;

/// The module that opens the upstream connection; its directives share the prefix.
enum class upstream_module { proxy, grpc, uwsgi };
/// "proxy_", "grpc_", "uwsgi_": the prefix of the module's directives.
std::string_view prefix_of(upstream_module m);

/// Where the backend is: on this host (a loopback address or `localhost`), a unix socket, over a
/// network (any other address or host name), or unknown (a variable decides at run time).
enum class backend_reach { loopback, unix_socket, network, unknown };
/// "loopback", "unix socket", "network", "unknown".
std::string to_string(backend_reach r);

/// The reach of one address as nginx reads it in proxy_pass or an upstream `server`:
/// "unix:PATH", "[v6]:port", "host:port", "host".
backend_reach reach_of_address(std::string_view address);

/// The host part of an address ("10.0.0.1" of "10.0.0.1:443", "::1" of "[::1]:443", "" for a
/// unix socket) and its port (0 when none is written).
struct host_port {
  std::string host;
  int port = 0;
  bool unix_socket = false;
};
/// `address` split as nginx's ngx_parse_url splits it.
host_port split_address(std::string_view address);

/// True when `host` is a host name (not an IPv4 or IPv6 literal, not empty, no variable): a
/// backend nginx reaches by name, which may serve several names on one address.
bool is_host_name(std::string_view host);

/// An `upstream NAME { ... }` block of http or stream.
struct upstream_block {
  context_kind context{};
  const config::directive* where = nullptr;  ///< the `upstream` directive
  std::string name;
  /// The `server` directives' addresses as written, in order.
  std::vector<std::string> servers;
  std::vector<const config::directive*> server_where;
  /// `keepalive N`: idle connections each worker keeps to the block; nullopt when absent.
  std::optional<int> keepalive;
  const config::directive* keepalive_where = nullptr;
  /// `keepalive_requests` and `keepalive_timeout` as written (nullopt: nginx's defaults).
  std::optional<std::int64_t> keepalive_requests;
  std::optional<std::int64_t> keepalive_timeout_ms;
  /// `zone NAME [SIZE]`: the peers (and their saved TLS sessions) live in shared memory.
  const config::directive* zone_where = nullptr;
  /// Loopback when every server is on this host or a unix socket, network when any is not.
  backend_reach reach = backend_reach::unknown;
};

/// The effective value of one upstream directive at a location: the innermost level that sets
/// it (nested location or `if`, location, server, http/stream block) gives all of its
/// occurrences (repeatable directives such as proxy_ssl_conf_command and proxy_set_header take
/// the whole list of one level, as nginx's merge does), else nginx's built-in default.
struct upstream_setting {
  /// The block whose directives set it (location, server, http or stream); null for a default.
  const config::directive* level = nullptr;
  /// Every occurrence at that level, in config order (empty for a default).
  std::vector<const config::directive*> occurrences;
  /// The arguments of the last occurrence, or the default's.
  std::vector<std::string_view> args;
  /// First argument or "".
  std::string_view first() const { return args.empty() ? std::string_view() : args.front(); }
  /// The last occurrence, null for a default.
  const config::directive* where() const {
    return occurrences.empty() ? nullptr : occurrences.back();
  }
  bool is_default() const { return level == nullptr; }
};

/// One TLS upstream: a proxy_pass/grpc_pass/uwsgi_pass to TLS in an http location, or a stream
/// server's proxy_pass with `proxy_ssl on`.
struct tls_upstream {
  context_kind context{};
  std::size_t server = 0;                   ///< index into model::servers
  const config::directive* pass = nullptr;  ///< the *_pass directive
  /// The innermost `location` holding the pass (an `if` or `limit_except` is inside it); null in
  /// stream.
  const config::directive* location = nullptr;
  upstream_module module = upstream_module::proxy;
  std::string target;  ///< as written
  /// The target with each `$var` replaced by the literal of a `set $var ...` in the
  /// location's chain (the common way to make nginx resolve a name per request), else `target`.
  std::string resolved_target;
  /// The target holds a variable: nginx works it out per request.
  bool has_variables = false;
  /// The target's host is one variable of an http `map` whose every value names an upstream
  /// block: each request goes to one of those blocks (block stays nullopt: which one varies).
  bool map_selects_upstream_blocks = false;
  /// The host of the resolved target (the upstream name, an address or a host name); "" for a
  /// unix socket or when a variable supplies it.
  std::string host;
  int port = 0;  ///< the target's port, 0 when none is written
  /// Index into model::upstreams of the block the target names (by host, as nginx matches it),
  /// nullopt for none: an address, or a name resolved per request.
  std::optional<std::size_t> block;
  backend_reach reach = backend_reach::unknown;
  /// Effective settings, by directive name without the module prefix ("ssl_verify",
  /// "ssl_session_reuse", "http_version", "set_header", ...; stream adds "ssl").
  std::vector<std::pair<std::string, upstream_setting>> settings;
  /// The setting `suffix` (without prefix), or null when neither set nor defaulted.
  const upstream_setting* get(std::string_view suffix) const;
  /// The full directive name of `suffix` for this module ("proxy_ssl_verify").
  std::string directive(std::string_view suffix) const;

  /// HTTP version of the upstream request: proxy_http_version's value (default "1.0", "1.1" from
  /// 1.30), "2"
  /// for grpc, "" for uwsgi (its protocol has no keep-alive) and stream.
  std::string http_version;
  /// The Connection header sent upstream (proxy only): the effective proxy_set_header list's
  /// Connection, else nginx's: "close" before 1.30, none ("") from 1.30. "" means not sent.
  std::string connection_header;
  /// The proxy_set_header Connection directive, null when nginx's `close` applies.
  const config::directive* connection_where = nullptr;
  /// The Connection value holds a variable (a `map`, often "upgrade" or "close").
  bool connection_variable = false;
  /// When the Connection value is one variable set by a `map` of the http block: that map.
  const config::directive* connection_map = nullptr;
  /// The map's entry that decides connection_for_plain_requests (its `''` line or `default`);
  /// null for the implicit default (an empty value) or when unknown.
  const config::directive* connection_map_entry = nullptr;
  /// The Connection value a request without an Upgrade header gets through connection_map: for
  /// `map $http_upgrade` the `''` entry, else its default (regular expressions checked after the
  /// exact strings, as nginx's map does); for any other map whose every entry gives the same
  /// literal, that literal. nullopt when each request decides (other sources, regular
  /// expressions that may match the empty string, values with variables, an `include`).
  std::optional<std::string> connection_for_plain_requests;
  /// The name nginx would send as SNI and verify: proxy_ssl_name's value, else the host.
  std::string ssl_name() const;
};

struct version;
/// True when nginx `v` keeps upstream connections without being told (measured on 1.30.6, not on
/// 1.26.3: docs/nginx-facts.md#upstream-tls): proxy_http_version defaults to 1.1, no
/// `Connection: close` is added, and an upstream block without `keepalive` keeps idle
/// connections. The 1.29.x mainline that introduced it is not measured here; 1.30.0 is assumed.
bool keeps_upstream_connections_by_default(const version& v);

/// The upstream directives the model resolves, without the module prefix.
const std::vector<std::string_view>& upstream_setting_names();

/// Collects the upstream blocks and TLS upstreams of `m` (called by model::build).
void add_upstreams(model& m);

}  // namespace ngxtls::model
