#include "model/upstream.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>

#include "config/values.hpp"
#include "model/model.hpp"

namespace ngxtls::model {

std::string_view prefix_of(upstream_module m) {
  switch (m) {
    case upstream_module::proxy:
      return "proxy_";
    case upstream_module::grpc:
      return "grpc_";
    case upstream_module::uwsgi:
      return "uwsgi_";
  }
  return "proxy_";
}

std::string to_string(backend_reach r) {
  switch (r) {
    case backend_reach::loopback:
      return "loopback";
    case backend_reach::unix_socket:
      return "unix socket";
    case backend_reach::network:
      return "network";
    case backend_reach::unknown:
      return "unknown";
  }
  return "unknown";
}

host_port split_address(std::string_view a) {
  host_port out;
  if (a.size() >= 5 && a.substr(0, 5) == "unix:") {
    out.unix_socket = true;
    return out;
  }
  if (!a.empty() && a.front() == '[') {
    const auto close = a.find(']');
    if (close == std::string_view::npos) {
      out.host = std::string(a.substr(1));
      return out;
    }
    out.host = std::string(a.substr(1, close - 1));
    if (close + 1 < a.size() && a[close + 1] == ':')
      out.port = config::parse_port(a.substr(close + 2)).value_or(0);
    return out;
  }
  const auto colon = a.rfind(':');
  if (colon == std::string_view::npos) {
    out.host = std::string(a);
  } else {
    out.host = std::string(a.substr(0, colon));
    out.port = config::parse_port(a.substr(colon + 1)).value_or(0);
  }
  return out;
}

namespace {

bool starts_with_nocase(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && config::equal_ignoring_case(s.substr(0, p.size()), p);
}

bool is_ipv4(const std::string& h) {
  in_addr a{};
  return inet_pton(AF_INET, h.c_str(), &a) == 1;
}

bool is_ipv6(const std::string& h) {
  in6_addr a{};
  return inet_pton(AF_INET6, h.c_str(), &a) == 1;
}

}  // namespace

bool is_host_name(std::string_view host) {
  const std::string h(host);
  return !h.empty() && h.find('$') == std::string::npos && !is_ipv4(h) && !is_ipv6(h);
}

backend_reach reach_of_address(std::string_view address) {
  const host_port hp = split_address(address);
  if (hp.unix_socket) return backend_reach::unix_socket;
  if (hp.host.empty() || hp.host.find('$') != std::string::npos) return backend_reach::unknown;
  if (is_ipv4(hp.host))
    return hp.host.rfind("127.", 0) == 0 ? backend_reach::loopback : backend_reach::network;
  if (is_ipv6(hp.host)) {
    in6_addr a{};
    inet_pton(AF_INET6, hp.host.c_str(), &a);
    return IN6_IS_ADDR_LOOPBACK(&a) ? backend_reach::loopback : backend_reach::network;
  }
  // glibc resolves `localhost` (and names under .localhost, RFC 6761) to loopback addresses.
  std::string lower(hp.host);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "localhost" || lower.ends_with(".localhost")) return backend_reach::loopback;
  return backend_reach::network;
}

const upstream_setting* tls_upstream::get(std::string_view suffix) const {
  for (const auto& [name, value] : settings)
    if (name == suffix) return &value;
  return nullptr;
}

std::string tls_upstream::directive(std::string_view suffix) const {
  return std::string(prefix_of(module)) + std::string(suffix);
}

std::string tls_upstream::ssl_name() const {
  const auto* n = get("ssl_name");
  if (n && !n->is_default() && !n->args.empty()) return std::string(n->first());
  return host;
}

bool keeps_upstream_connections_by_default(const version& v) {
  return !(v < version{1, 30, 0});
}

const std::vector<std::string_view>& upstream_setting_names() {
  static const std::vector<std::string_view> names{
      "ssl_session_reuse", "ssl_protocols",       "ssl_ciphers",      "ssl_server_name",
      "ssl_name",          "ssl_verify",          "ssl_verify_depth", "ssl_trusted_certificate",
      "ssl_certificate",   "ssl_certificate_key", "ssl_conf_command", "ssl_password_file",
      "ssl_crl",
  };
  return names;
}

namespace {

/// nginx's built-in defaults of the upstream directives (docs/nginx-facts.md#upstream-tls):
/// proxy_ssl_protocols follows ssl_protocols' default of each version.
const std::vector<std::string_view>* upstream_default(std::string_view suffix, const version& v,
                                                      upstream_module module, bool stream) {
  static const std::vector<std::string_view> on{"on"}, off{"off"}, one{"1"}, ciphers{"DEFAULT"},
      http10{"1.0"}, http11{"1.1"};
  if (suffix == "ssl_session_reuse") return &on;
  if (suffix == "ssl_server_name" || suffix == "ssl_verify") return &off;
  if (suffix == "ssl_verify_depth") return &one;
  if (suffix == "ssl_ciphers") return &ciphers;
  if (suffix == "ssl_protocols") return default_text("ssl_protocols", v);
  if (suffix == "http_version" && module == upstream_module::proxy && !stream)
    return keeps_upstream_connections_by_default(v) ? &http11 : &http10;
  if (suffix == "ssl" && stream) return &off;
  return nullptr;
}

/// The blocks a location's settings are merged through, outermost first: http/stream, server,
/// then every location, `if` and `limit_except` down to the pass directive.
using level_chain = std::vector<const config::directive*>;

upstream_setting resolve(const level_chain& chain, const std::string& full,
                         const std::vector<std::string_view>* fallback) {
  upstream_setting out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    for (const auto& d : (*it)->block)
      if (!d.has_block && d.name == full) out.occurrences.push_back(&d);
    if (out.occurrences.empty()) continue;
    out.level = *it;
    for (const auto& a : out.occurrences.back()->args) out.args.push_back(a.value());
    return out;
  }
  if (fallback) out.args = *fallback;
  return out;
}

/// The literal value of the innermost `set $name VALUE` on the chain, if it holds no variable.
std::optional<std::string_view> set_literal(const level_chain& chain, std::string_view name) {
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const config::directive* last = nullptr;
    for (const auto& d : (*it)->block)
      if (!d.has_block && d.name == "set" && d.args.size() == 2 && d.args[0].value().size() > 1 &&
          d.args[0].value().substr(1) == name)
        last = &d;
    if (!last) continue;
    const auto v = last->args[1].value();
    if (v.find('$') != std::string_view::npos) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

/// The literal values a `map SOURCE $name { ... }` of `http` can give (its default, or the empty
/// string without one); nullopt when there is no such map or an entry is not a literal (a
/// variable, an include, a nested block).
std::optional<std::set<std::string>> map_values(const config::directive& http,
                                                std::string_view name) {
  for (const auto& d : http.block) {
    if (!d.has_block || d.name != "map" || d.args.size() != 2) continue;
    const auto var = d.args[1].value();
    if (var.size() < 2 || var.front() != '$' || var.substr(1) != name) continue;
    std::set<std::string> values;
    bool has_default = false;
    for (const auto& e : d.block) {
      if (e.has_block || e.name == "include") return std::nullopt;
      if (e.args.size() != 1) continue;  // `hostnames;`, `volatile;` take no value
      const std::string value(e.args[0].value());
      if (value.find('$') != std::string::npos) return std::nullopt;
      values.insert(value);
      has_default = has_default || e.name == "default";
    }
    if (!has_default) values.insert("");
    return values;
  }
  return std::nullopt;
}

/// The one literal that `$name` holds on `chain`: a literal `set`, else an `http` map whose
/// every entry gives the same literal.
std::optional<std::string> variable_literal(const level_chain& chain, std::string_view name) {
  if (auto v = set_literal(chain, name)) return std::string(*v);
  if (auto values = map_values(*chain.front(), name); values && values->size() == 1)
    return *values->begin();
  return std::nullopt;
}

/// `target` with each `$var` (or `${var}`) that a literal `set` (or a single-valued `map`)
/// gives replaced by that literal; other variables stay as written.
std::string substitute_set(const level_chain& chain, std::string_view target) {
  std::string out;
  for (std::size_t i = 0; i < target.size();) {
    if (target[i] != '$') {
      out += target[i++];
      continue;
    }
    std::size_t start = i + 1, end = start;
    const bool braced = start < target.size() && target[start] == '{';
    if (braced) {
      start += 1;
      end = target.find('}', start);
      if (end == std::string_view::npos) end = target.size();
    } else {
      while (end < target.size() &&
             (std::isalnum(static_cast<unsigned char>(target[end])) || target[end] == '_'))
        ++end;
    }
    const std::size_t next = std::min(target.size(), end + (braced ? 1 : 0));
    const auto value =
        end > start ? variable_literal(chain, target.substr(start, end - start)) : std::nullopt;
    out += value ? *value : std::string(target.substr(i, next - i));
    i = std::max(next, i + 1);
  }
  return out;
}

/// What `map SOURCE $var { ... }` gives requests without an Upgrade header (see
/// tls_upstream::connection_for_plain_requests).
void resolve_connection_map(tls_upstream& u, const config::directive& http) {
  const std::string& v = u.connection_header;
  if (v.size() < 2 || v.front() != '$' || !std::all_of(v.begin() + 1, v.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_';
      }))
    return;  // not exactly one `$name`
  const config::directive* map = nullptr;
  for (const auto& d : http.block)
    if (d.has_block && d.name == "map" && d.args.size() == 2 && d.args[1].value() == v) {
      map = &d;
      break;
    }
  if (!map) return;
  u.connection_map = map;
  bool unknown = false, regex = false;
  const config::directive *empty_key = nullptr, *default_entry = nullptr;
  std::set<std::string> values;
  for (const auto& e : map->block) {
    if (e.has_block || e.name == "include" || e.args.size() != 1) {
      unknown = unknown || (e.has_block || e.name == "include");
      continue;  // `hostnames;`, `volatile;` take no value
    }
    const std::string value(e.args[0].value());
    if (value.find('$') != std::string::npos) unknown = true;
    values.insert(value);
    if (e.name == "default")
      default_entry = &e;
    else if (e.name.empty())
      empty_key = &e;
    else if (e.name.front() == '~')
      regex = true;
  }
  if (!default_entry) values.insert("");  // an absent default gives the empty string
  if (unknown) return;
  if (config::equal_ignoring_case(map->args[0].value(), "$http_upgrade")) {
    // Exact strings first, then regular expressions, then the default (ngx_http_map_find).
    if (empty_key) {
      u.connection_map_entry = empty_key;
      u.connection_for_plain_requests = std::string(empty_key->args[0].value());
    } else if (!regex) {
      u.connection_map_entry = default_entry;
      u.connection_for_plain_requests =
          default_entry ? std::string(default_entry->args[0].value()) : std::string();
    }
    return;
  }
  if (values.size() == 1) u.connection_for_plain_requests = *values.begin();
}

upstream_block read_block(const config::directive& d, context_kind ctx) {
  upstream_block b;
  b.context = ctx;
  b.where = &d;
  b.name = d.args.empty() ? std::string() : std::string(d.args[0].value());
  bool any_network = false, any_unknown = false;
  for (const auto& c : d.block) {
    if (c.name == "server" && !c.args.empty()) {
      b.servers.emplace_back(c.args[0].value());
      b.server_where.push_back(&c);
      const auto r = reach_of_address(c.args[0].value());
      any_network = any_network || r == backend_reach::network;
      any_unknown = any_unknown || r == backend_reach::unknown;
    } else if (c.name == "keepalive" && !c.args.empty()) {
      const auto v = c.args[0].value();
      if (!v.empty() && v.size() < 9 &&
          std::all_of(v.begin(), v.end(), [](unsigned char x) { return std::isdigit(x); })) {
        b.keepalive = std::stoi(std::string(v));
        b.keepalive_where = &c;
      }
    } else if (c.name == "keepalive_requests" && !c.args.empty()) {
      const auto v = c.args[0].value();
      if (!v.empty() && v.size() < 12 &&
          std::all_of(v.begin(), v.end(), [](unsigned char x) { return std::isdigit(x); }))
        b.keepalive_requests = std::stoll(std::string(v));
    } else if (c.name == "keepalive_timeout" && !c.args.empty()) {
      b.keepalive_timeout_ms = config::parse_time_ms(c.args[0].value());
    } else if (c.name == "zone") {
      b.zone_where = &c;
    }
  }
  b.reach = any_network                        ? backend_reach::network
            : any_unknown || b.servers.empty() ? backend_reach::unknown
            : std::all_of(b.servers.begin(), b.servers.end(),
                          [](const std::string& s) {
                            return reach_of_address(s) == backend_reach::unix_socket;
                          })
                ? backend_reach::unix_socket
                : backend_reach::loopback;
  return b;
}

struct builder {
  model& m;
  /// The upstream blocks of the context being walked (indices into m.upstreams).
  std::vector<std::size_t> blocks;

  std::optional<std::size_t> block_named(std::string_view host) const {
    for (std::size_t i : blocks)
      if (config::equal_ignoring_case(m.upstreams[i].name, host)) return i;
    return std::nullopt;
  }

  void fill(tls_upstream& u, const level_chain& chain, bool stream) {
    for (std::string_view n : upstream_setting_names())
      u.settings.emplace_back(
          std::string(n),
          resolve(chain, u.directive(n), upstream_default(n, m.versions.nginx, u.module, stream)));
    if (stream) return;
    if (u.module == upstream_module::proxy) {
      for (std::string_view n : {"http_version", "set_header"})
        u.settings.emplace_back(
            std::string(n),
            resolve(chain, u.directive(n), upstream_default(n, m.versions.nginx, u.module, false)));
      u.http_version = std::string(u.get("http_version")->first());
      // Before 1.30 nginx adds `Connection: close`; 1.30 adds none, whatever the HTTP version.
      u.connection_header = keeps_upstream_connections_by_default(m.versions.nginx) ? "" : "close";
      for (const auto* d : u.get("set_header")->occurrences)
        if (!d->args.empty() && config::equal_ignoring_case(d->args[0].value(), "connection")) {
          u.connection_where = d;
          u.connection_header = d->args.size() > 1 ? std::string(d->args[1].value()) : "";
        }
      u.connection_variable = u.connection_header.find('$') != std::string::npos;
      if (u.connection_variable) resolve_connection_map(u, *chain.front());
    } else if (u.module == upstream_module::grpc) {
      u.http_version = "2";
    }
  }

  /// The target's host and port, the block it names and its reach.
  void locate(tls_upstream& u, std::string_view address) {
    const host_port hp = split_address(address);
    if (hp.unix_socket) {
      u.reach = backend_reach::unix_socket;
      return;
    }
    u.port = hp.port;
    if (hp.host.find('$') != std::string::npos) return;  // a variable names the host
    u.host = hp.host;
    // nginx matches an upstream block by name, case-insensitively, when no port is written
    // (ngx_http_upstream_add; a port with a block's name is an error at start).
    if (hp.port == 0) u.block = block_named(hp.host);
    u.reach = u.block ? m.upstreams[*u.block].reach : reach_of_address(address);
  }

  void http_pass(const config::directive& d, const level_chain& chain, std::size_t server) {
    upstream_module module;
    std::string_view scheme;
    if (d.name == "proxy_pass") {
      module = upstream_module::proxy;
      scheme = "https://";
    } else if (d.name == "grpc_pass") {
      module = upstream_module::grpc;
      scheme = "grpcs://";
    } else {
      module = upstream_module::uwsgi;
      scheme = "suwsgi://";
    }
    if (d.args.empty()) return;
    tls_upstream u;
    u.context = context_kind::http;
    u.server = server;
    u.pass = &d;
    for (const auto* level : chain)
      if (level->name == "location") u.location = level;
    u.module = module;
    u.target = std::string(d.args[0].value());
    u.has_variables = u.target.find('$') != std::string::npos;
    u.resolved_target = substitute_set(chain, u.target);
    // A target whose scheme a variable supplies is not known to be TLS.
    if (!starts_with_nocase(u.resolved_target, scheme)) return;
    std::string_view rest(u.resolved_target);
    rest.remove_prefix(scheme.size());
    // proxy_pass https://unix:/path:/uri; others end the address at the URI's '/', or at a
    // variable after a literal host (`https://pool$request_uri` names upstream pool).
    std::string_view address = rest;
    if (rest.starts_with("unix:")) {
      address = rest.substr(0, rest.find(':', 5));
    } else {
      const auto end = rest.find_first_of(rest.starts_with("$") ? "/" : "/$");
      if (end != std::string_view::npos) address = rest.substr(0, end);
    }
    locate(u, address);
    if (!u.block && address.size() > 1 && address.front() == '$')
      u.map_selects_upstream_blocks = map_names_blocks(chain, address.substr(1));
    fill(u, chain, false);
    m.tls_upstreams.push_back(std::move(u));
  }

  /// True when `$name` comes from an http map whose every value names an upstream block here:
  /// nginx then looks the value up among the upstream blocks (ngx_http_upstream_init_request).
  bool map_names_blocks(const level_chain& chain, std::string_view name) const {
    if (name.starts_with("{") && name.ends_with("}")) name = name.substr(1, name.size() - 2);
    const auto values = map_values(*chain.front(), name);
    if (!values || values->empty()) return false;
    return std::all_of(values->begin(), values->end(),
                       [&](const std::string& v) { return block_named(v).has_value(); });
  }

  void walk(const config::directive& block, level_chain& chain, std::size_t server) {
    for (const auto& d : block.block) {
      if (d.has_block) {
        if (d.name == "location" || d.name == "if" || d.name == "limit_except") {
          chain.push_back(&d);
          walk(d, chain, server);
          chain.pop_back();
        }
      } else if (d.name == "proxy_pass" || d.name == "grpc_pass" || d.name == "uwsgi_pass") {
        http_pass(d, chain, server);
      }
    }
  }

  void stream_server(const server& s, std::size_t index) {
    level_chain chain{s.block, s.where};
    for (const auto& d : s.where->block) {
      if (d.has_block || d.name != "proxy_pass" || d.args.empty()) continue;
      tls_upstream u;
      u.context = context_kind::stream;
      u.server = index;
      u.pass = &d;
      u.module = upstream_module::proxy;
      u.target = std::string(d.args[0].value());
      u.has_variables = u.target.find('$') != std::string::npos;
      u.resolved_target = substitute_set(chain, u.target);
      u.settings.emplace_back(
          "ssl",
          resolve(chain, "proxy_ssl", upstream_default("ssl", m.versions.nginx, u.module, true)));
      if (u.get("ssl")->first() != "on") continue;
      locate(u, u.resolved_target);
      fill(u, chain, true);
      m.tls_upstreams.push_back(std::move(u));
    }
  }
};

}  // namespace

void add_upstreams(model& m) {
  if (!m.cfg) return;
  // The upstream blocks of each http and stream block: a server sees its own block's only.
  std::unordered_map<const config::directive*, std::vector<std::size_t>> blocks_of;
  for (const auto& top : m.cfg->root) {
    if (!top.has_block || (top.name != "http" && top.name != "stream")) continue;
    const context_kind ctx = top.name == "http" ? context_kind::http : context_kind::stream;
    for (const auto& d : top.block)
      if (d.has_block && d.name == "upstream") {
        blocks_of[&top].push_back(m.upstreams.size());
        m.upstreams.push_back(read_block(d, ctx));
      }
  }
  builder b{m, {}};
  for (std::size_t i = 0; i < m.servers.size(); ++i) {
    const server& s = m.servers[i];
    if (!s.where || !s.block || s.context == context_kind::mail) continue;
    const auto found = blocks_of.find(s.block);
    b.blocks = found == blocks_of.end() ? std::vector<std::size_t>() : found->second;
    if (s.context == context_kind::stream) {
      b.stream_server(s, i);
    } else {
      level_chain chain{s.block, s.where};
      b.walk(*s.where, chain, i);
    }
  }
}

}  // namespace ngxtls::model
