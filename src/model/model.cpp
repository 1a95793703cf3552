#include "model/model.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "config/values.hpp"

namespace ngxtls::model {

std::string to_string(origin o, bool stream_context) {
  switch (o) {
    case origin::server:
      return "server";
    case origin::inherited:
      return stream_context ? "stream" : "http";
    case origin::nginx_default:
      return "default";
  }
  return "?";
}

std::string to_string(context_kind c) {
  switch (c) {
    case context_kind::http:
      return "http";
    case context_kind::stream:
      return "stream";
    case context_kind::mail:
      return "mail";
  }
  return "?";
}

std::string to_string(origin o, context_kind c) {
  return o == origin::inherited ? to_string(c) : to_string(o);
}

values_view setting::args() const {
  return values.empty() ? values_view() : values.back().args;
}

std::string_view setting::first() const {
  const auto a = args();
  return a.empty() ? std::string_view() : a.front();
}

const config::directive* setting::where() const {
  return values.empty() ? nullptr : values.back().where;
}

namespace {

std::uint64_t name_key(std::string_view name) {
  return setting_key(name);
}

void sort_by_key(setting_list& l) {
  std::stable_sort(l.begin(), l.end(),
                   [](const named_setting& a, const named_setting& b) { return a.key < b.key; });
}

const setting* find_in(const setting_list& l, std::string_view name, std::uint64_t key) {
  auto it = l.begin();
  if (l.size() <= 16) {
    // A server's own few settings: a straight scan over keys beats the branches of a search.
    while (it != l.end() && it->key < key) ++it;
  } else {
    it = std::lower_bound(l.begin(), l.end(), key,
                          [](const named_setting& e, std::uint64_t k) { return e.key < k; });
  }
  for (; it != l.end() && it->key == key; ++it)
    if (it->name == name) return &it->value;
  return nullptr;
}

const setting* find_in(const setting_list& l, std::string_view name) {
  return find_in(l, name, name_key(name));
}

}  // namespace

const setting* server::get(std::string_view name, std::uint64_t key) const {
  if (const setting* s = find_in(own, name, key)) return s;
  return outer ? find_in(outer->effective, name, key) : nullptr;
}

std::vector<std::pair<std::string_view, const setting*>> server::settings() const {
  std::vector<std::pair<std::string_view, const setting*>> out;
  for (const auto& e : own) out.emplace_back(e.name, &e.value);
  if (outer) {
    for (const auto& e : outer->inherited)
      if (!find_in(own, e.name)) out.emplace_back(e.name, &e.value);
    for (const auto& e : outer->defaults)
      if (!find_in(own, e.name) && !find_in(outer->inherited, e.name))
        out.emplace_back(e.name, &e.value);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

const config::directive* server::first_ssl_listen() const {
  for (const auto& l : listens)
    if (l.ssl && l.where) return l.where;
  for (const auto& l : listens)
    if (l.where) return l.where;
  return nullptr;
}

std::string server_label(const model& m, const server& s) {
  for (const auto& n : s.names)
    if (!n.empty()) return n;
  if (!m.cfg || !s.where) return "server";
  const auto w = m.cfg->where(*s.where);
  return "server at " + w.file + ":" + std::to_string(w.line);
}

std::string listen_socket::name() const {
  if (address.rfind("unix:", 0) == 0) return address;
  return address + ":" + std::to_string(port);
}

namespace {

using default_list = std::vector<std::string_view>;

/// The defaults that do not depend on the version, by directive: with ssl_protocols, the one
/// list of the directives the model gives a default.
const std::map<std::string_view, default_list>& fixed_defaults() {
  static const std::map<std::string_view, default_list> fixed = {
      {"ssl_session_tickets", {"on"}},        {"ssl_session_cache", {"none"}},
      {"ssl_session_timeout", {"5m"}},        {"ssl_ciphers", {"HIGH:!aNULL:!MD5"}},
      {"ssl_prefer_server_ciphers", {"off"}}, {"ssl_stapling", {"off"}},
      {"ssl_stapling_verify", {"off"}},       {"ssl_early_data", {"off"}},
      {"ssl_verify_client", {"off"}},         {"ssl_verify_depth", {"1"}},
      {"ssl_ecdh_curve", {"auto"}},           {"ssl_buffer_size", {"16k"}},
      {"ssl_reject_handshake", {"off"}},
  };
  return fixed;
}

}  // namespace

/// Built-in defaults as static text (docs/nginx-facts.md#builtin-defaults): the model's default
/// settings point here.
const std::vector<std::string_view>* default_text(std::string_view d, const version& v) {
  if (d == "ssl_protocols") {
    static const default_list old{"TLSv1", "TLSv1.1", "TLSv1.2"};
    static const default_list mid{"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"};
    static const default_list now{"TLSv1.2", "TLSv1.3"};
    if (v < version{1, 23, 4}) return &old;
    if (v < version{1, 27, 3}) return &mid;
    return &now;
  }
  if (auto it = fixed_defaults().find(d); it != fixed_defaults().end()) return &it->second;
  return nullptr;
}

std::optional<std::vector<std::string>> nginx_default(const std::string& d, const version& v) {
  const auto* text = default_text(d, v);
  if (!text) return std::nullopt;
  return std::vector<std::string>(text->begin(), text->end());
}

namespace {

bool tracked(std::string_view name) {
  return name.rfind("ssl_", 0) == 0 || name == "ssl" || name == "resolver" || name == "http2" ||
         name == "starttls" || name.rfind("quic_", 0) == 0 || name.rfind("http3", 0) == 0;
}

/// Occurrences of the tracked directives of one block, by name in config order, sorted.
setting_list collect(config::list<config::directive> block, origin from) {
  setting_list out;
  // Sized up front: growing by doubling left a server's list up to half empty.
  std::size_t n = 0;
  for (const auto& d : block) n += !d.has_block && tracked(d.name);
  out.reserve(n);
  for (const auto& d : block) {
    if (d.has_block || !tracked(d.name)) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.name == d.name; });
    if (it == out.end()) {
      out.push_back({name_key(d.name), d.name, setting{from, {}}});
      it = out.end() - 1;
    }
    it->value.values.push_back({values_view(d.args), &d});
  }
  sort_by_key(out);
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

int to_port(std::string_view s) {
  return config::parse_port(s).value_or(0);
}

/// "[v6]" in the one spelling inet_ntop gives ("[0::1]" is "[::1]"), as nginx prints and compares
/// the address; text that is no IPv6 address stays as written.
std::string canonical_ipv6(const std::string& bracketed) {
  if (bracketed.size() < 3 || bracketed.back() != ']') return bracketed;
  const std::string inner = bracketed.substr(1, bracketed.size() - 2);
  in6_addr bytes{};
  if (inet_pton(AF_INET6, inner.c_str(), &bytes) != 1) return bracketed;
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(AF_INET6, &bytes, text, sizeof text) == nullptr) return bracketed;
  return "[" + std::string(text) + "]";
}

// listen address[:port] | port | unix:path (nginx src/core/ngx_inet.c ngx_parse_url).
listen_directive parse_listen(const config::directive& d, context_kind ctx) {
  listen_directive l;
  l.where = &d;
  l.port = ctx == context_kind::http ? 80 : 0;
  if (!d.args.empty()) {
    const std::string a(d.args[0].value());
    if (a.rfind("unix:", 0) == 0) {
      l.address = a;
      l.port = 0;
    } else if (!a.empty() && a[0] == '[') {
      auto close = a.find(']');
      l.address = canonical_ipv6(a.substr(0, close == std::string::npos ? a.size() : close + 1));
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
    const std::string_view f = d.args[i].value();
    if (f == "ssl")
      l.ssl = true;
    else if (f == "default_server" || f == "default")
      l.default_server = true;
    else if (f == "reuseport")
      l.reuseport = true;
    else if (f == "quic")
      l.quic = true;
    else if (f == "http2")
      l.http2 = true;
    else if (f == "proxy_protocol")
      l.proxy_protocol = true;
  }
  return l;
}

/// The defaulted directives, as settings, for one nginx version; argument records and their
/// bytes are copied from default_text() into a storage that lives as long as the process
/// (tree records must live in one: config::detail::region_offset), one set per version.
const setting_list& defaults_for(const version& nginx) {
  static std::mutex mu;
  static config::storage store;
  static std::map<version, std::unique_ptr<setting_list>> cache;
  const std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[nginx];
  if (slot) return *slot;
  slot = std::make_unique<setting_list>();
  std::vector<std::string_view> names{"ssl_protocols"};
  for (const auto& [k, v] : fixed_defaults()) names.push_back(k);
  for (std::string_view k : names) {
    const auto* text = default_text(k, nginx);
    std::vector<config::argument> args;
    for (auto t : *text) {
      char* bytes = store.allocate<char>(std::max<std::size_t>(t.size(), 1));
      std::copy(t.begin(), t.end(), bytes);
      args.push_back(config::argument::literal({bytes, t.size()}));
    }
    setting st;
    st.values.push_back({values_view(store.copy(args.data(), args.size())), nullptr});
    slot->push_back({name_key(k), k, std::move(st)});
  }
  sort_by_key(*slot);
  return *slot;
}

server make_server(const config::directive& sd, const config::directive& block, context_kind ctx,
                   const std::shared_ptr<const context_settings>& outer,
                   const assumed_versions& versions) {
  server s;
  s.context = ctx;
  s.where = &sd;
  s.block = &block;
  s.own = collect(sd.block, origin::server);
  s.outer = outer;
  std::size_t listens = 0;
  for (const auto& d : sd.block) listens += d.name == "listen";
  s.listens.reserve(std::max<std::size_t>(listens, 1));
  for (const auto& d : sd.block) {
    if (d.name == "listen")
      s.listens.push_back(parse_listen(d, ctx));
    else if (d.name == "server_name")
      for (const auto& a : d.args) s.names.emplace_back(a.value());
  }
  if (s.listens.empty() && ctx == context_kind::http) {
    listen_directive implicit;
    implicit.address = "*";
    implicit.port = 80;
    s.listens.push_back(implicit);
  }
  // `ssl on` (removed in 1.25.1) turns every listen of the server into an ssl one.
  const setting* legacy = s.get("ssl");
  bool legacy_on = legacy && legacy->first() == "on" && versions.nginx < version{1, 25, 1};
  for (auto& l : s.listens) {
    if (legacy_on) l.ssl = true;
    if (l.ssl) s.has_ssl = true;
  }
  if (ctx == context_kind::mail) {
    const setting* starttls = s.get("starttls");
    if (starttls && (starttls->first() == "on" || starttls->first() == "only") &&
        starttls->where()) {
      s.starttls = starttls->where();
      s.has_ssl = true;
    }
  }
  return s;
}

void add_context(const config::directive& block_dir, context_kind ctx, model& m) {
  auto shared = std::make_shared<context_settings>();
  shared->inherited = collect(block_dir.block, origin::inherited);
  for (const auto& e : defaults_for(m.versions.nginx))
    if (!find_in(shared->inherited, e.name)) shared->defaults.push_back(e);
  shared->effective = shared->inherited;
  shared->effective.insert(shared->effective.end(), shared->defaults.begin(),
                           shared->defaults.end());
  sort_by_key(shared->effective);
  const std::shared_ptr<const context_settings> outer = shared;
  std::vector<const config::directive*> blocks;
  for (const auto& d : block_dir.block)
    if (d.name == "server" && d.has_block) blocks.push_back(&d);
  // Servers are independent of each other: a fleet's thousands are built on up to 4 threads.
  const std::size_t first = m.servers.size();
  m.servers.resize(first + blocks.size());
  const std::size_t parts =
      blocks.size() < 1024 ? 1 : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 4);
  auto build_part = [&](std::size_t t) {
    for (std::size_t i = blocks.size() * t / parts; i < blocks.size() * (t + 1) / parts; ++i)
      m.servers[first + i] = make_server(*blocks[i], block_dir, ctx, outer, m.versions);
  };
  std::vector<std::jthread> pool;
  for (std::size_t t = 1; t < parts; ++t) pool.emplace_back(build_part, t);
  build_part(0);
}

/// The listen that already holds the address and port of listen `li` of server `si` when
/// nginx refuses that listen as a duplicate, else null. In the same server any repeat is
/// refused (a QUIC listen is UDP and another socket than a TCP one); across servers, nginx
/// refuses the second server in mail and, before 1.25.5, in stream: http servers, and stream
/// servers from 1.25.5, share the socket and are told apart by server name.
const config::directive* earlier_listen(const model& m, const listen_socket& k, std::size_t si,
                                        std::size_t li) {
  const server& s = m.servers[si];
  const listen_directive& l = s.listens[li];
  for (std::size_t j = 0; j < li; ++j) {
    const auto& e = s.listens[j];
    if (e.where && !e.duplicate_of && e.address == l.address && e.port == l.port &&
        e.quic == l.quic)
      return e.where;
  }
  const bool cross_server_refused =
      k.context == context_kind::mail ||
      (k.context == context_kind::stream && m.versions.nginx < version{1, 25, 5});
  if (!cross_server_refused || k.servers.empty() || k.servers.front() == si) return nullptr;
  for (const auto& e : m.servers[k.servers.front()].listens)
    if (e.where && !e.duplicate_of && e.address == l.address && e.port == l.port &&
        e.quic == l.quic)
      return e.where;
  return nullptr;
}

}  // namespace

model build(const config::config& cfg, const assumed_versions& versions) {
  model m;
  m.cfg = &cfg;
  m.versions = versions;
  // Every context's servers in one allocation (a second context grew the first's by doubling).
  std::size_t servers = 0;
  for (const auto& d : cfg.root)
    if ((d.name == "http" || d.name == "stream" || d.name == "mail") && d.has_block)
      for (const auto& c : d.block) servers += c.name == "server" && c.has_block;
  m.servers.reserve(servers);
  for (const auto& d : cfg.root) {
    if (d.name == "http" && d.has_block)
      add_context(d, context_kind::http, m);
    else if (d.name == "stream" && d.has_block)
      add_context(d, context_kind::stream, m);
    else if (d.name == "mail" && d.has_block)
      add_context(d, context_kind::mail, m);
    else if (d.name == "quic_bpf" && !d.args.empty()) {
      m.quic_bpf_where = &d;
      m.quic_bpf = d.args[0].value() == "on";
    } else if (d.name == "worker_processes" && !d.args.empty()) {
      m.worker_processes_where = &d;
      const std::string_view v = d.args[0].value();
      if (v == "auto")
        m.worker_processes = 0;
      else if (all_digits(v) && v.size() < 6)
        m.worker_processes = std::stoi(std::string(v));
    }
  }
  // Group listens into sockets in config order. A listen nginx refuses as a duplicate joins
  // none: nginx does not start, and modelling it as a shared socket would invent findings
  // (docs/nginx-facts.md#duplicate-listen).
  // Sockets by context, address and port: a search of every socket per listen was quadratic
  // when each site has an address of its own.
  std::unordered_map<std::string, std::size_t> socket_of;
  std::string key;
  for (std::size_t i = 0; i < m.servers.size(); ++i) {
    server& s = m.servers[i];
    for (std::size_t li = 0; li < s.listens.size(); ++li) {
      auto& l = s.listens[li];
      key.assign(1, static_cast<char>(s.context));
      key += l.quic ? 'u' : 't';  // UDP (QUIC) and TCP sockets of one address are two sockets
      key += std::to_string(l.port);
      key += ' ';
      key += l.address;
      const auto found = socket_of.find(key);
      auto it = found == socket_of.end()
                    ? m.sockets.end()
                    : m.sockets.begin() + static_cast<std::ptrdiff_t>(found->second);
      // A template placeholder (`listen ${IP}:443`) is no address nginx could compare.
      if (l.where && it != m.sockets.end() && !l.address.starts_with("unix:") &&
          l.address.find('$') == std::string::npos) {
        l.duplicate_of = earlier_listen(m, *it, i, li);
        if (l.duplicate_of) continue;
      }
      if (it == m.sockets.end()) {
        listen_socket k;
        k.context = s.context;
        k.address = l.address;
        k.port = l.port;
        k.default_server = i;
        k.quic = l.quic;
        socket_of.emplace(key, m.sockets.size());
        m.sockets.push_back(k);
        it = m.sockets.end() - 1;
      }
      // Servers are visited in order, so a repeat of `i` can only be the last entry
      // (a linear search here was quadratic in the servers of one socket).
      if (it->servers.empty() || it->servers.back() != i) it->servers.push_back(i);
      const auto socket = static_cast<std::uint32_t>(it - m.sockets.begin());
      if (std::find(s.sockets.begin(), s.sockets.end(), socket) == s.sockets.end())
        s.sockets.insert(std::upper_bound(s.sockets.begin(), s.sockets.end(), socket), socket);
      it->ssl = it->ssl || l.ssl;
      it->reuseport = it->reuseport || l.reuseport;
      if (l.reuseport && l.where) it->reuseport_listens.push_back(l.where);
      if (l.default_server && !it->default_marked) {
        it->default_server = i;
        it->default_marked = true;
      }
    }
  }
  add_upstreams(m);
  return m;
}

bool offers_tls(const server& s) {
  if (s.has_ssl) return true;
  for (const auto& l : s.listens)
    if (l.quic) return true;
  const setting* certs = s.get("ssl_certificate");
  return certs && !certs->values.empty();
}

bool protocols_enable(const setting* protocols, std::string_view proto) {
  if (!protocols) return false;
  const auto a = protocols->args();
  return std::find(a.begin(), a.end(), proto) != a.end();
}

session_cache_kind cache_kind(const setting* cache) {
  if (!cache || cache->args().empty()) return session_cache_kind::none;
  bool builtin = false;
  for (const auto a : cache->args()) {
    if (a == "off") return session_cache_kind::off;
    if (a == "none") return session_cache_kind::none;
    if (a.rfind("shared:", 0) == 0) return session_cache_kind::shared;
    if (a.rfind("builtin", 0) == 0) builtin = true;
  }
  return builtin ? session_cache_kind::builtin : session_cache_kind::none;
}

std::optional<std::uint64_t> shared_cache_bytes(const setting* cache) {
  if (!cache) return std::nullopt;
  for (const auto a : cache->args()) {
    if (a.rfind("shared:", 0) != 0) continue;
    auto colon = a.rfind(':');
    if (colon <= 6) return std::nullopt;
    const auto bytes = config::parse_size_bytes(a.substr(colon + 1));
    if (!bytes) return std::nullopt;
    return static_cast<std::uint64_t>(*bytes);
  }
  return std::nullopt;
}

bool is_on(const setting* s) {
  return s && s->first() == "on";
}

std::vector<const listen_socket*> quic_sockets_of(const model& m, const server& s) {
  std::vector<const listen_socket*> out;
  for (const std::uint32_t ki : s.sockets)
    if (m.sockets[ki].quic) out.push_back(&m.sockets[ki]);
  return out;
}

bool has_tcp_tls(const server& s) {
  for (const auto& l : s.listens)
    if (l.ssl && !l.quic) return true;
  return false;
}

}  // namespace ngxtls::model
