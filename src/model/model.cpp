#include "model/model.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace ngxtls::model {

std::string to_string(origin o, bool stream_context) {
  switch (o) {
    case origin::server: return "server";
    case origin::inherited: return stream_context ? "stream" : "http";
    case origin::nginx_default: return "default";
  }
  return "?";
}

const std::vector<std::string>& setting::args() const {
  static const std::vector<std::string> empty;
  return values.empty() ? empty : values.back().args;
}

std::string setting::first() const {
  const auto& a = args();
  return a.empty() ? std::string() : a.front();
}

const config::directive* setting::where() const {
  return values.empty() ? nullptr : values.back().where;
}

const setting* server::get(std::string_view name) const {
  auto it = settings.find(name);
  return it == settings.end() ? nullptr : &it->second;
}

const config::directive* server::first_ssl_listen() const {
  for (const auto& l : listens)
    if (l.ssl && l.where) return l.where;
  for (const auto& l : listens)
    if (l.where) return l.where;
  return nullptr;
}

std::string listen_socket::name() const {
  if (address.rfind("unix:", 0) == 0) return address;
  return address + ":" + std::to_string(port);
}

std::optional<std::vector<std::string>> nginx_default(const std::string& d, const version& v) {
  using list = std::vector<std::string>;
  if (d == "ssl_protocols") {
    if (v < version{1, 23, 4}) return list{"TLSv1", "TLSv1.1", "TLSv1.2"};
    if (v < version{1, 27, 3}) return list{"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"};
    return list{"TLSv1.2", "TLSv1.3"};
  }
  static const std::map<std::string, list> fixed = {
      {"ssl_session_tickets", {"on"}},
      {"ssl_session_cache", {"none"}},
      {"ssl_session_timeout", {"5m"}},
      {"ssl_ciphers", {"HIGH:!aNULL:!MD5"}},
      {"ssl_prefer_server_ciphers", {"off"}},
      {"ssl_stapling", {"off"}},
      {"ssl_stapling_verify", {"off"}},
      {"ssl_early_data", {"off"}},
      {"ssl_verify_client", {"off"}},
      {"ssl_verify_depth", {"1"}},
      {"ssl_ecdh_curve", {"auto"}},
      {"ssl_buffer_size", {"16k"}},
      {"ssl_reject_handshake", {"off"}},
  };
  if (auto it = fixed.find(d); it != fixed.end()) return it->second;
  return std::nullopt;
}

namespace {

bool tracked(const std::string& name) {
  return name.rfind("ssl_", 0) == 0 || name == "ssl" || name == "resolver" || name == "http2";
}

std::vector<std::string> values_of(const config::directive& d) {
  std::vector<std::string> out;
  out.reserve(d.args.size());
  for (const auto& a : d.args) out.push_back(a.value);
  return out;
}

using level = std::map<std::string, std::vector<occurrence>>;

void collect(const std::vector<config::directive>& block, level& into) {
  for (const auto& d : block)
    if (!d.has_block && tracked(d.name)) into[d.name].push_back({values_of(d), &d});
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

int to_port(const std::string& s) {
  if (!all_digits(s) || s.size() > 5) return 0;
  return std::stoi(s);
}

// listen address[:port] | port | unix:path (nginx src/core/ngx_inet.c ngx_parse_url).
listen_directive parse_listen(const config::directive& d, context_kind ctx) {
  listen_directive l;
  l.where = &d;
  l.port = ctx == context_kind::http ? 80 : 0;
  if (!d.args.empty()) {
    const std::string& a = d.args[0].value;
    if (a.rfind("unix:", 0) == 0) {
      l.address = a;
      l.port = 0;
    } else if (!a.empty() && a[0] == '[') {
      auto close = a.find(']');
      l.address = a.substr(0, close == std::string::npos ? a.size() : close + 1);
      if (close != std::string::npos && close + 1 < a.size() && a[close + 1] == ':')
        l.port = to_port(a.substr(close + 2));
    } else if (all_digits(a)) {
      l.port = to_port(a);
    } else {
      auto colon = a.rfind(':');
      if (colon == std::string::npos) {
        l.address = a;
      } else {
        l.address = a.substr(0, colon);
        l.port = to_port(a.substr(colon + 1));
      }
    }
    if (l.address.empty() || l.address == "0.0.0.0") l.address = "*";
  }
  for (std::size_t i = 1; i < d.args.size(); ++i) {
    const std::string& f = d.args[i].value;
    if (f == "ssl") l.ssl = true;
    else if (f == "default_server" || f == "default") l.default_server = true;
    else if (f == "reuseport") l.reuseport = true;
    else if (f == "quic") l.quic = true;
    else if (f == "http2") l.http2 = true;
    else if (f == "proxy_protocol") l.proxy_protocol = true;
  }
  return l;
}

/// The defaulted directives and their default arguments for one nginx version, computed
/// once per context rather than once per server.
using default_list = std::vector<std::pair<std::string, std::vector<std::string>>>;

default_list defaults_for(const version& nginx) {
  default_list out;
  for (const char* k : {"ssl_protocols", "ssl_session_tickets", "ssl_session_cache",
                        "ssl_session_timeout", "ssl_ciphers", "ssl_prefer_server_ciphers",
                        "ssl_stapling", "ssl_stapling_verify", "ssl_early_data",
                        "ssl_verify_client", "ssl_verify_depth", "ssl_ecdh_curve",
                        "ssl_buffer_size", "ssl_reject_handshake"})
    if (auto def = nginx_default(k, nginx)) out.emplace_back(k, std::move(*def));
  return out;
}

server make_server(const config::directive& sd, context_kind ctx, const level& outer,
                   const default_list& defaults, const assumed_versions& versions) {
  server s;
  s.context = ctx;
  s.where = &sd;
  level own;
  collect(sd.block, own);
  for (const auto& d : sd.block) {
    if (d.name == "listen") s.listens.push_back(parse_listen(d, ctx));
    else if (d.name == "server_name")
      for (const auto& a : d.args) s.names.push_back(a.value);
  }
  if (s.listens.empty() && ctx == context_kind::http) {
    listen_directive implicit;
    implicit.address = "*";
    implicit.port = 80;
    s.listens.push_back(implicit);
  }
  // Set here (moved: `own` is this server's), else inherited (copied), else the default.
  for (auto& [name, occs] : own) {
    setting st;
    st.from = origin::server;
    st.values = std::move(occs);
    s.settings.emplace(name, std::move(st));
  }
  for (const auto& [name, occs] : outer) {
    if (own.count(name)) continue;
    setting st;
    st.from = origin::inherited;
    st.values = occs;
    s.settings.emplace(name, std::move(st));
  }
  for (const auto& [name, args] : defaults) {
    if (own.count(name) || outer.count(name)) continue;
    setting st;
    st.from = origin::nginx_default;
    st.values.push_back({args, nullptr});
    s.settings.emplace(name, std::move(st));
  }
  // `ssl on` (removed in 1.25.1) turns every listen of the server into an ssl one.
  const setting* legacy = s.get("ssl");
  bool legacy_on = legacy && legacy->first() == "on" && versions.nginx < version{1, 25, 1};
  for (auto& l : s.listens) {
    if (legacy_on) l.ssl = true;
    if (l.ssl) s.has_ssl = true;
  }
  return s;
}

void add_context(const config::directive& block_dir, context_kind ctx, model& m) {
  level outer;
  collect(block_dir.block, outer);
  const default_list defaults = defaults_for(m.versions.nginx);
  for (const auto& d : block_dir.block)
    if (d.name == "server" && d.has_block)
      m.servers.push_back(make_server(d, ctx, outer, defaults, m.versions));
}

}  // namespace

model build(const config::config& cfg, const assumed_versions& versions) {
  model m;
  m.cfg = &cfg;
  m.versions = versions;
  for (const auto& d : cfg.root) {
    if (d.name == "http" && d.has_block) add_context(d, context_kind::http, m);
    else if (d.name == "stream" && d.has_block) add_context(d, context_kind::stream, m);
    else if (d.name == "worker_processes" && !d.args.empty()) {
      m.worker_processes_where = &d;
      const std::string& v = d.args[0].value;
      if (v == "auto") m.worker_processes = 0;
      else if (all_digits(v) && v.size() < 6) m.worker_processes = std::stoi(v);
    }
  }
  // Group listens into sockets in config order.
  for (std::size_t i = 0; i < m.servers.size(); ++i) {
    const server& s = m.servers[i];
    for (const auto& l : s.listens) {
      auto it = std::find_if(m.sockets.begin(), m.sockets.end(), [&](const listen_socket& k) {
        return k.context == s.context && k.address == l.address && k.port == l.port;
      });
      if (it == m.sockets.end()) {
        listen_socket k;
        k.context = s.context;
        k.address = l.address;
        k.port = l.port;
        k.default_server = i;
        m.sockets.push_back(k);
        it = m.sockets.end() - 1;
      }
      // Servers are visited in order, so a repeat of `i` can only be the last entry
      // (a linear search here was quadratic in the servers of one socket).
      if (it->servers.empty() || it->servers.back() != i) it->servers.push_back(i);
      it->ssl = it->ssl || l.ssl;
      it->reuseport = it->reuseport || l.reuseport;
      if (l.default_server && !it->default_marked) {
        it->default_server = i;
        it->default_marked = true;
      }
    }
  }
  return m;
}

bool protocols_enable(const setting* protocols, const std::string& proto) {
  if (!protocols) return false;
  const auto& a = protocols->args();
  return std::find(a.begin(), a.end(), proto) != a.end();
}

session_cache_kind cache_kind(const setting* cache) {
  if (!cache || cache->args().empty()) return session_cache_kind::none;
  bool builtin = false;
  for (const auto& a : cache->args()) {
    if (a == "off") return session_cache_kind::off;
    if (a == "none") return session_cache_kind::none;
    if (a.rfind("shared:", 0) == 0) return session_cache_kind::shared;
    if (a.rfind("builtin", 0) == 0) builtin = true;
  }
  return builtin ? session_cache_kind::builtin : session_cache_kind::none;
}

std::optional<std::uint64_t> shared_cache_bytes(const setting* cache) {
  if (!cache) return std::nullopt;
  for (const auto& a : cache->args()) {
    if (a.rfind("shared:", 0) != 0) continue;
    auto colon = a.rfind(':');
    if (colon <= 6) return std::nullopt;
    std::string size = a.substr(colon + 1);
    if (size.empty()) return std::nullopt;
    std::uint64_t mult = 1;
    char unit = static_cast<char>(std::tolower(static_cast<unsigned char>(size.back())));
    if (unit == 'k') mult = 1024;
    else if (unit == 'm') mult = 1024 * 1024;
    else if (unit == 'g') mult = 1024ull * 1024 * 1024;
    if (mult != 1) size.pop_back();
    if (!all_digits(size) || size.size() > 12) return std::nullopt;
    return std::stoull(size) * mult;
  }
  return std::nullopt;
}

bool is_on(const setting* s) { return s && s->first() == "on"; }

}  // namespace ngxtls::model
