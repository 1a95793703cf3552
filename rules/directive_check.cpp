#include "rules/directive_check.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <sstream>

#include "rules/common.hpp"

namespace ngxtls::rules::directives {

namespace {

constexpr std::pair<std::string_view, ctx> ctx_names[] = {
    {"main", ctx::main},
    {"events", ctx::events},
    {"http", ctx::http},
    {"server", ctx::server},
    {"location", ctx::location},
    {"if_server", ctx::if_server},
    {"if_location", ctx::if_location},
    {"limit_except", ctx::limit_except},
    {"upstream", ctx::upstream},
    {"stream", ctx::stream},
    {"stream_server", ctx::stream_server},
    {"stream_upstream", ctx::stream_upstream},
};

std::uint16_t bit(ctx c) {
  return static_cast<std::uint16_t>(c);
}

// Directives added after 1.22.1, and directives added before it that a lint of an older
// version must call unknown (nginx CHANGES). name, since, contexts (comma list), block,
// argument counts as in the TSV.
struct version_fact {
  const char* name;
  const char* since;
  const char* contexts;
  bool block;
  const char* args;
};
constexpr version_fact version_facts[] = {
    // HTTP/3 and QUIC (1.25.0), the http2 directive (1.25.1).
    {"http2", "1.25.1", "http,server", false, "1"},
    {"http3", "1.25.0", "http,server", false, "1"},
    {"http3_hq", "1.25.0", "http,server", false, "1"},
    {"http3_max_concurrent_streams", "1.25.0", "http,server", false, "1"},
    {"http3_stream_buffer_size", "1.25.0", "http,server", false, "1"},
    {"quic_active_connection_id_limit", "1.25.0", "http,server", false, "1"},
    {"quic_bpf", "1.25.0", "main", false, "1"},
    {"quic_gso", "1.25.0", "http,server", false, "1"},
    {"quic_host_key", "1.25.0", "http,server", false, "1"},
    {"quic_retry", "1.25.0", "http,server", false, "1"},
    // TLS directives and when they appeared (for linting older versions).
    {"ssl_conf_command", "1.19.4", "", false, ""},
    {"proxy_ssl_conf_command", "1.19.4", "", false, ""},
    {"ssl_reject_handshake", "1.19.4", "", false, ""},
    {"ssl_ocsp", "1.19.0", "", false, ""},
    {"ssl_ocsp_cache", "1.19.0", "", false, ""},
    {"ssl_ocsp_responder", "1.19.0", "", false, ""},
    {"ssl_early_data", "1.15.3", "", false, ""},
    {"ssl_password_file", "1.7.3", "", false, ""},
    {"ssl_buffer_size", "1.5.9", "", false, ""},
    {"ssl_session_ticket_key", "1.5.7", "", false, ""},
    {"ssl_session_tickets", "1.5.9", "", false, ""},
    {"ssl_stapling", "1.3.7", "", false, ""},
    {"ssl_trusted_certificate", "1.3.7", "", false, ""},
};

// Modules outside the measured table: module name, load_module stems, and the directive
// names or prefixes (ending in '*') they add (module docs).
struct module_fact {
  const char* module;
  std::vector<std::string_view> stems;
  std::vector<std::string_view> names;
};
const std::vector<module_fact>& module_facts() {
  static const std::vector<module_fact> facts = {
      {"mail", {"ngx_mail_module"}, {"mail"}},
      {"geoip",
       {"ngx_http_geoip_module", "ngx_stream_geoip_module"},
       {"geoip_country", "geoip_city", "geoip_org", "geoip_proxy", "geoip_proxy_recursive"}},
      {"perl", {"ngx_http_perl_module"}, {"perl", "perl_modules", "perl_require", "perl_set"}},
      {"xslt",
       {"ngx_http_xslt_filter_module"},
       {"xslt_stylesheet", "xslt_types", "xslt_param", "xslt_string_param", "xslt_last_modified",
        "xml_entities"}},
      {"image-filter", {"ngx_http_image_filter_module"}, {"image_filter", "image_filter_*"}},
      {"njs", {"ngx_http_js_module", "ngx_stream_js_module"}, {"js_*"}},
      {"headers-more",
       {"ngx_http_headers_more_filter_module"},
       {"more_set_headers", "more_clear_headers", "more_set_input_headers",
        "more_clear_input_headers"}},
      {"echo", {"ngx_http_echo_module"}, {"echo", "echo_*"}},
      {"brotli",
       {"ngx_http_brotli_filter_module", "ngx_http_brotli_static_module"},
       {"brotli", "brotli_*"}},
      {"geoip2", {"ngx_http_geoip2_module", "ngx_stream_geoip2_module"}, {"geoip2", "geoip2_*"}},
      {"vts", {"ngx_http_vhost_traffic_status_module"}, {"vhost_traffic_status*"}},
      {"modsecurity", {"ngx_http_modsecurity_module"}, {"modsecurity", "modsecurity_*"}},
      {"app-protect", {"ngx_http_app_protect_module"}, {"app_protect_*"}},
      {"passenger", {"ngx_http_passenger_module"}, {"passenger_*"}},
      {"nginx-plus",
       {},
       {"keyval", "keyval_zone", "auth_jwt", "auth_jwt_*", "health_check", "health_check_*",
        "sticky", "status_zone", "zone_sync", "zone_sync_*", "api", "state", "ntlm", "mqtt",
        "mqtt_*", "internal_redirect", "auth_oidc", "match"}},
      {"upstream-check",
       {},
       {"check", "check_http_send", "check_http_expect_alive", "check_status",
        "check_keepalive_requests", "check_shm_size"}},
      {"naxsi",
       {"ngx_http_naxsi_module"},
       {"MainRule", "BasicRule", "CheckRule", "LearningMode", "SecRulesEnabled", "SecRulesDisabled",
        "DeniedUrl", "LibInjectionSql", "LibInjectionXss", "main_rule", "basic_rule", "check_rule",
        "learning_mode", "rules_enabled", "rules_disabled", "denied_url", "libinjection_sql",
        "libinjection_xss"}},
      {"lua", {"ngx_http_lua_module", "ngx_stream_lua_module"}, {"*_by_lua*", "lua_*"}},
      {"ndk", {"ndk_http_module"}, {}},
      {"stream", {"ngx_stream_module"}, {}},
  };
  return facts;
}

bool name_matches(std::string_view pattern, std::string_view name) {
  if (pattern.size() > 1 && pattern.front() == '*' && pattern.back() == '*')
    return name.find(pattern.substr(1, pattern.size() - 2)) != std::string_view::npos;
  if (!pattern.empty() && pattern.back() == '*')
    return name.substr(0, pattern.size() - 1) == pattern.substr(0, pattern.size() - 1);
  return pattern == name;
}

std::uint16_t parse_contexts(std::string_view list) {
  std::uint16_t out = 0;
  std::size_t start = 0;
  while (start < list.size()) {
    auto comma = list.find(',', start);
    auto part = list.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (auto c = parse_ctx(part)) out |= bit(*c);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::uint16_t parse_counts(std::string_view list) {
  std::uint16_t out = 0;
  std::size_t start = 0;
  while (start < list.size()) {
    auto comma = list.find(',', start);
    auto part = list.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (!part.empty() && part[0] >= '0' && part[0] <= '8')
      out |= static_cast<std::uint16_t>(1u << (part[0] - '0'));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<entry> build_table() {
  std::vector<entry> out;
  std::istringstream in{std::string(embedded_tsv())};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::istringstream cols(line);
    std::string col;
    while (std::getline(cols, col, '\t')) f.push_back(col);
    if (f.size() < 5) continue;
    entry e;
    e.name = f[0];
    e.contexts = parse_contexts(f[1]);
    e.block = f[2] == "1";
    e.arg_counts = parse_counts(f[3]);
    e.module = f[4];
    out.push_back(std::move(e));
  }
  for (const auto& v : version_facts) {
    auto it =
        std::find_if(out.begin(), out.end(), [&](const entry& e) { return e.name == v.name; });
    if (it != out.end()) {
      it->since = v.since;
      continue;
    }
    entry e;
    e.name = v.name;
    e.contexts = parse_contexts(v.contexts);
    e.block = v.block;
    e.arg_counts = parse_counts(v.args);
    e.module = "core";
    e.since = v.since;
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const entry& a, const entry& b) { return a.name < b.name; });
  return out;
}

// A hash of a directive name from its length and first and last 8 bytes: table names share
// long prefixes and suffixes ("proxy_ssl_", "_timeout") but rarely all three, and it costs a
// few instructions where hashing every byte cost more than the rest of the walk.
std::uint64_t name_hash(std::string_view s) {
  std::uint64_t a = 0, b = 0;
  const std::size_t n = s.size();
  if (n >= 8) {
    std::memcpy(&a, s.data(), 8);
    std::memcpy(&b, s.data() + n - 8, 8);
  } else {
    for (std::size_t i = 0; i < n; ++i)
      a |= std::uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
  }
  std::uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ull) ^ n) * 0xFF51AFD7ED558CCDull;
  return h ^ (h >> 29);
}

// What the walk needs of a table entry beyond the entry itself, worked out once per process
// (the walk visits every directive: 300,000 on a 20 MB config).
struct entry_facts {
  std::optional<model::version> since;  // entry::since parsed; nullopt when ""
  bool builtin = false;                 // module "core" or "stream": no load_module needed
};

// table() indexed by name: open addressing over a power-of-two array, each slot the name's
// hash (high half) and 1 + the entry's index (0 = empty).
struct table_index {
  const entry* entries = table().data();  // table(), without its guard on every lookup
  std::vector<entry_facts> facts;         // indexed like table()
  std::vector<std::pair<std::uint32_t, std::uint32_t>> slots;
  std::size_t mask = 0;

  table_index() {
    const auto& t = table();
    std::size_t n = 16;
    while (n < t.size() * 3) n *= 2;  // at most a third full: short probes
    slots.assign(n, {0, 0});
    mask = n - 1;
    facts.reserve(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
      const entry& e = t[i];
      facts.push_back({e.since.empty() ? std::nullopt : model::version::parse(e.since),
                       e.module == "core" || e.module == "stream"});
      const std::uint64_t h = name_hash(e.name);
      std::size_t at = h & mask;
      while (slots[at].second != 0) at = (at + 1) & mask;
      slots[at] = {static_cast<std::uint32_t>(h >> 32), static_cast<std::uint32_t>(i + 1)};
    }
  }

  // The index of `name` in table(), or -1.
  std::ptrdiff_t lookup(std::string_view name) const {
    const std::uint64_t h = name_hash(name);
    const auto hi = static_cast<std::uint32_t>(h >> 32);
    for (std::size_t at = h & mask; slots[at].second != 0; at = (at + 1) & mask) {
      if (slots[at].first != hi) continue;
      const std::size_t i = slots[at].second - 1;
      if (entries[i].name == name) return static_cast<std::ptrdiff_t>(i);
    }
    return -1;
  }
};

// `listen` parameters of http servers added after the oldest nginx the rules know (nginx
// CHANGES 1.25.0: HTTP/3): an older nginx stops at them with `invalid parameter "quic"`.
struct listen_parameter_fact {
  std::string_view name;
  model::version since;
};
constexpr listen_parameter_fact listen_parameter_facts[] = {{"quic", {1, 25, 0}}};

const table_index& indexed_table() {
  static const table_index x;
  return x;
}

struct walker {
  const engine::context& c;
  std::set<std::string> modules;  // loaded or declared
  bool unknown_module_loaded = false;
  std::vector<issue> out;
  /// Issues past engine::max_findings_per_rule of their kind: counted, not kept (a config of
  /// millions of unknown directives held an issue for each, hundreds of MB).
  std::array<std::size_t, 3> dropped{};
  std::array<std::size_t, 3> kept{};
  const table_index& idx = indexed_table();
  const model::version v = c.model().versions.nginx;
  const bool ssl_obsolete = v >= model::version{1, 25, 1};
  /// Modules the detected nginx builds as dynamic ones (nginx -V).
  const std::set<std::string>& v_dynamic = c.model().versions.dynamic_modules;

  /// nginx's words for a block whose module is built dynamic and not loaded.
  static std::string dynamic_message(const std::string& module) {
    return "unknown directive \"" + module + "\": the nginx here is built with --with-" + module +
           "=dynamic (nginx -V) and this config has no load_module for ngx_" + module +
           "_module.so (Debian: include /etc/nginx/modules-enabled/*.conf): nginx refuses to start";
  }

  void add(issue i) {
    const auto k = static_cast<std::size_t>(i.kind);
    if (kept[k] < engine::max_findings_per_rule) {
      ++kept[k];
      out.push_back(std::move(i));
    } else {
      ++dropped[k];
    }
  }

  /// True for a block added around a site file (config::implied_blocks), not read from it.
  bool is_implied(const config::directive& d) const {
    const auto& blocks = c.model().cfg->implied_blocks;
    return std::find(blocks.begin(), blocks.end(), &d) != blocks.end();
  }

  void visit(config::list<config::directive> block, ctx where) {
    for (const auto& d : block) check(d, where);
  }

  void check(const config::directive& d, ctx where) {
    // A BOM-prefixed first directive is utf8-bom's.
    if (d.name.starts_with("\xEF\xBB\xBF")) return;
    if (ssl_obsolete && d.name == "ssl") return;  // obsolete-directive's
    const std::ptrdiff_t i = idx.lookup(d.name);
    const entry* e = i < 0 ? nullptr : &idx.entries[i];
    const entry_facts* facts = i < 0 ? nullptr : &idx.facts[static_cast<std::size_t>(i)];
    if (e && facts->since && *facts->since > v) {
      add({problem::unknown, &d,
           "unknown directive \"" + std::string(d.name) + "\": added in nginx " + e->since +
               ", assumed " + v.str(),
           engine::severity::error});
      return;
    }
    if (!e) {
      if (auto m = owning_module(d.name)) {
        // The mail { } wrapped around a site file is the including nginx.conf's, and so is its
        // load_module: only the directives of the file are nginx's to refuse.
        if (is_implied(d)) return;
        if (*m == "mail" && !modules.count("mail") && v_dynamic.count("mail")) {
          add({problem::unknown, &d, dynamic_message("mail"), engine::severity::error});
          return;
        }
        if (!modules.count(*m))
          add({problem::unknown, &d,
               "unknown directive \"" + std::string(d.name) + "\" unless the " + *m +
                   " module is loaded: this config has no load_module for it (declare built-in "
                   "modules in .ngxtls.toml: modules = [\"" +
                   *m + "\"])",
               engine::severity::warning});
        return;  // a module we know only by name: contexts and arguments unchecked
      }
      add({problem::unknown, &d,
           "unknown directive \"" + std::string(d.name) + "\": nginx " + v.str() +
               " refuses to start" +
               (unknown_module_loaded ? " unless a loaded third-party module provides it" : ""),
           unknown_module_loaded ? engine::severity::note : engine::severity::error});
      return;
    }
    // The stream { } wrapped around a site file is the including nginx.conf's, and so is its
    // load_module.
    if (e->module == "stream" && d.name == "stream" && !is_implied(d) && !modules.count("stream") &&
        v_dynamic.count("stream")) {
      add({problem::unknown, &d, dynamic_message("stream"), engine::severity::error});
      return;
    }
    if (!facts->builtin && !modules.count(e->module)) {
      add({problem::unknown, &d,
           "unknown directive \"" + std::string(d.name) + "\" unless the " + e->module +
               " module is loaded: this config has no load_module for it (declare built-in "
               "modules in .ngxtls.toml: modules = [\"" +
               e->module + "\"])",
           engine::severity::warning});
      return;
    }
    if (e->contexts && !(e->contexts & bit(where))) {
      add({problem::not_allowed, &d,
           "\"" + std::string(d.name) + "\" directive is not allowed here (in " + describe(where) +
               ")",
           engine::severity::error});
      return;
    }
    if (e->arg_counts && e->block == d.has_block) {
      const std::size_t n = d.args.size();
      const bool ok = n >= 8 ? (e->arg_counts & (1u << 8)) != 0 : (e->arg_counts & (1u << n)) != 0;
      if (!ok)
        add({problem::arguments, &d,
             "invalid number of arguments in \"" + std::string(d.name) + "\" directive (" +
                 std::to_string(n) + " given)",
             engine::severity::error});
    }
    if (where == ctx::server && d.name == "listen") check_listen_parameters(d);
    if (where == ctx::stream_server && d.name == "listen") check_stream_listen(d);
    if (!d.has_block || d.lua_body()) return;
    std::optional<ctx> inner = child_context(d.name, where);
    if (inner) visit(d.block, *inner);
  }

  void check_listen_parameters(const config::directive& d) {
    for (std::size_t a = 1; a < d.args.size(); ++a)
      for (const auto& p : listen_parameter_facts)
        if (d.args[a].value() == p.name && p.since > v) {
          add({problem::arguments, &d,
               "invalid parameter \"" + std::string(p.name) + "\" in \"listen\": added in nginx " +
                   p.since.str() + ", assumed " + v.str() + ": nginx refuses to start",
               engine::severity::error});
          return;
        }
    check_quic_listen(d);
  }

  // The TCP-only parameters nginx refuses beside `quic` (ngx_http_core_listen; measured on
  // 1.26.3 and 1.30.6: `"listen" directive "ssl" parameter is incompatible with "quic"`).
  void check_quic_listen(const config::directive& d) {
    bool quic = false;
    for (std::size_t a = 1; a < d.args.size(); ++a) quic = quic || d.args[a].value() == "quic";
    if (!quic) return;
    static constexpr std::string_view tcp_only[] = {
        "ssl", "proxy_protocol", "deferred", "so_keepalive", "backlog", "fastopen", "http2"};
    for (std::size_t a = 1; a < d.args.size(); ++a) {
      const auto arg = d.args[a].value();
      const auto name = arg.substr(0, arg.find('='));
      for (std::string_view p : tcp_only)
        if (name == p) {
          add({problem::arguments, &d,
               "\"listen\" directive \"" + std::string(p) +
                   "\" parameter is incompatible with \"quic\": nginx refuses to start",
               engine::severity::error});
          return;
        }
    }
  }

  // nginx's stream module has no QUIC (measured on 1.26.3: `invalid parameter "quic"`).
  void check_stream_listen(const config::directive& d) {
    for (std::size_t a = 1; a < d.args.size(); ++a)
      if (d.args[a].value() == "quic") {
        add({problem::arguments, &d,
             "invalid parameter \"quic\" in a stream \"listen\": QUIC is HTTP/3 only: nginx "
             "refuses to start",
             engine::severity::error});
        return;
      }
  }

  static std::optional<ctx> child_context(std::string_view name, ctx where) {
    switch (where) {
      case ctx::main:
        if (name == "events") return ctx::events;
        if (name == "http") return ctx::http;
        if (name == "stream") return ctx::stream;
        return std::nullopt;  // mail and unknown blocks: not checked
      case ctx::http:
        if (name == "server") return ctx::server;
        if (name == "upstream") return ctx::upstream;
        return std::nullopt;  // map, geo, types, split_clients, charset_map: key-value lines
      case ctx::server:
      case ctx::location:
        if (name == "location") return ctx::location;
        if (name == "if") return where == ctx::server ? ctx::if_server : ctx::if_location;
        if (name == "limit_except") return ctx::limit_except;
        return std::nullopt;
      case ctx::stream:
        if (name == "server") return ctx::stream_server;
        if (name == "upstream") return ctx::stream_upstream;
        return std::nullopt;
      default:
        return std::nullopt;
    }
  }
};

// Issues that nginx would report for the top level of the main file in `where`.
std::size_t top_level_misfits(config::list<config::directive> root, ctx where) {
  std::size_t n = 0;
  for (const auto& d : root) {
    const entry* e = find(d.name);
    if (e && e->contexts && !(e->contexts & bit(where))) ++n;
  }
  return n;
}

}  // namespace

std::optional<ctx> parse_ctx(std::string_view name) {
  for (const auto& [n, c] : ctx_names)
    if (n == name) return c;
  return std::nullopt;
}

std::string describe(ctx c) {
  switch (c) {
    case ctx::main:
      return "the main context";
    case ctx::events:
      return "events";
    case ctx::http:
      return "http";
    case ctx::server:
      return "server";
    case ctx::location:
      return "location";
    case ctx::if_server:
      return "if in server";
    case ctx::if_location:
      return "if in location";
    case ctx::limit_except:
      return "limit_except";
    case ctx::upstream:
      return "upstream";
    case ctx::stream:
      return "stream";
    case ctx::stream_server:
      return "stream server";
    case ctx::stream_upstream:
      return "stream upstream";
  }
  return "?";
}

const std::vector<entry>& table() {
  static const std::vector<entry> t = build_table();
  return t;
}

const entry* find(std::string_view name) {
  const std::ptrdiff_t i = indexed_table().lookup(name);
  return i < 0 ? nullptr : &table()[static_cast<std::size_t>(i)];
}

std::optional<std::string> owning_module(std::string_view name) {
  for (const auto& m : module_facts())
    for (auto pattern : m.names)
      if (name_matches(pattern, name)) return std::string(m.module);
  return std::nullopt;
}

std::string module_of_load(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view file = slash == std::string_view::npos ? path : path.substr(slash + 1);
  std::string_view stem = file.substr(0, file.find('.'));
  for (const auto& m : module_facts())
    for (auto s : m.stems)
      if (s == stem) return m.module;
  return std::string(stem);
}

const issue_set& shared_issues(const engine::context& c) {
  return c.shared<issue_set>("directives::issues", [&] {
    issue_set set;
    set.issues = issues(c, std::nullopt, &set.dropped);
    return set;
  });
}

std::vector<issue> issues(const engine::context& c, std::optional<ctx> forced,
                          std::array<std::size_t, 3>* dropped) {
  const auto& m = c.model();
  walker w{c, c.options().modules, false, {}};
  if (!m.cfg) return {};
  for (const auto& d : m.cfg->root) {
    if (d.name != "load_module" || d.args.empty()) continue;
    std::string mod = module_of_load(std::string(d.args[0].value()));
    w.modules.insert(mod);
    bool known = false;
    for (const auto& f : module_facts()) known = known || f.module == mod;
    if (!known) w.unknown_module_loaded = true;
  }
  for (const auto& mod : c.options().modules) {
    bool known = false;
    for (const auto& f : module_facts()) known = known || f.module == mod;
    if (!known) w.unknown_module_loaded = true;
  }
  // Pick the context the main file is meant for: main unless it is a snippet.
  ctx start = ctx::main;
  const auto& root = m.cfg->root;
  const bool has_main_blocks =
      std::any_of(root.begin(), root.end(), [](const config::directive& d) {
        return d.name == "http" || d.name == "events" || d.name == "stream";
      });
  if (forced) {
    start = *forced;
  } else if (!has_main_blocks && top_level_misfits(root, ctx::main) > 0) {
    std::size_t best = top_level_misfits(root, ctx::main);
    for (ctx candidate : {ctx::http, ctx::server}) {
      std::size_t n = top_level_misfits(root, candidate);
      if (n < best) {
        best = n;
        start = candidate;
      }
    }
  }
  w.visit(root, start);
  if (dropped) *dropped = w.dropped;
  return std::move(w.out);
}

}  // namespace ngxtls::rules::directives
