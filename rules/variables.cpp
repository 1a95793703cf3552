#include "rules/variables.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include "rules/common.hpp"
#include "rules/directive_check.hpp"

namespace ngxtls::rules {
namespace {

// Measured with `nginx -t` on `set $probe $NAME;` for every string of the binaries (and the
// stream module) of nginx 1.22.1 (Debian), 1.26.3 and 1.30.6 (Debian sid), union of the three
// (tools/probe_variable_names.py; docs/nginx-facts.md#unknown-variable).
// clang-format off
constexpr std::array<std::string_view, 124> http_builtin = {
      "ancient_browser", "args", "binary_remote_addr", "body_bytes_sent", "bytes_sent",
      "connection", "connection_requests", "connection_time", "connections_active",
      "connections_reading", "connections_waiting", "connections_writing", "content_length",
      "content_type", "date_gmt", "date_local", "document_root", "document_uri",
      "fastcgi_path_info", "fastcgi_script_name", "grpc_internal_trailers", "gzip_ratio", "host",
      "hostname", "http2", "http3", "https", "invalid_referer", "is_args", "is_request_port",
      "limit_conn_status", "limit_rate", "limit_req_status", "modern_browser", "msec", "msie",
      "nginx_version", "pid", "pipe", "proxy_add_x_forwarded_for", "proxy_host",
      "proxy_internal_body_length", "proxy_internal_chunked", "proxy_internal_host", "proxy_port",
      "proxy_protocol_addr", "proxy_protocol_port", "proxy_protocol_server_addr",
      "proxy_protocol_server_port", "query_string", "realip_remote_addr", "realip_remote_port",
      "realpath_root", "remote_addr", "remote_port", "remote_user", "request", "request_body",
      "request_body_file", "request_completion", "request_filename", "request_id",
      "request_length", "request_method", "request_port", "request_time", "request_uri", "scheme",
      "secure_link", "secure_link_expires", "server_addr", "server_name", "server_port",
      "server_protocol", "slice_range", "ssl_alpn_protocol", "ssl_cipher", "ssl_ciphers",
      "ssl_client_cert", "ssl_client_escaped_cert", "ssl_client_fingerprint", "ssl_client_i_dn",
      "ssl_client_i_dn_legacy", "ssl_client_raw_cert", "ssl_client_s_dn",
      "ssl_client_s_dn_legacy", "ssl_client_serial", "ssl_client_sigalg", "ssl_client_v_end",
      "ssl_client_v_remain", "ssl_client_v_start", "ssl_client_verify", "ssl_curve", "ssl_curves",
      "ssl_early_data", "ssl_ech_outer_server_name", "ssl_ech_status", "ssl_protocol",
      "ssl_server_name", "ssl_session_id", "ssl_session_reused", "ssl_sigalg", "status",
      "tcpinfo_rcv_space", "tcpinfo_rtt", "tcpinfo_rttvar", "tcpinfo_snd_cwnd", "time_iso8601",
      "time_local", "uid_got", "uid_reset", "uid_set", "upstream_addr", "upstream_bytes_received",
      "upstream_bytes_sent", "upstream_cache_etag", "upstream_cache_last_modified",
      "upstream_cache_status", "upstream_connect_time", "upstream_header_time",
      "upstream_response_length", "upstream_response_time", "upstream_status", "uri"};
constexpr std::array<std::string_view, 54> stream_builtin = {
      "binary_remote_addr", "bytes_received", "bytes_sent", "connection", "hostname",
      "limit_conn_status", "msec", "nginx_version", "pid", "protocol", "proxy_protocol_addr",
      "proxy_protocol_port", "proxy_protocol_server_addr", "proxy_protocol_server_port",
      "realip_remote_addr", "realip_remote_port", "remote_addr", "remote_port", "server_addr",
      "server_name", "server_port", "session_time", "ssl_alpn_protocol", "ssl_cipher",
      "ssl_ciphers", "ssl_client_cert", "ssl_client_escaped_cert", "ssl_client_fingerprint",
      "ssl_client_i_dn", "ssl_client_raw_cert", "ssl_client_s_dn", "ssl_client_serial",
      "ssl_client_v_end", "ssl_client_v_remain", "ssl_client_v_start", "ssl_client_verify",
      "ssl_curve", "ssl_curves", "ssl_preread_alpn_protocols", "ssl_preread_protocol",
      "ssl_preread_server_name", "ssl_protocol", "ssl_server_name", "ssl_session_id",
      "ssl_session_reused", "status", "time_iso8601", "time_local", "upstream_addr",
      "upstream_bytes_received", "upstream_bytes_sent", "upstream_connect_time",
      "upstream_first_byte_time", "upstream_session_time"};
// clang-format on

// Prefix variables: any name that starts with one is known (nginx's ngx_http_variables.c and
// ngx_stream_variables.c prefix tables; proxy_protocol_tlv_ from 1.23.2).
constexpr std::array<std::string_view, 9> http_prefixes = {"http_",
                                                           "sent_http_",
                                                           "sent_trailer_",
                                                           "cookie_",
                                                           "arg_",
                                                           "upstream_http_",
                                                           "upstream_trailer_",
                                                           "upstream_cookie_",
                                                           "proxy_protocol_tlv_"};
constexpr std::array<std::string_view, 1> stream_prefixes = {"proxy_protocol_tlv_"};

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The name a `$name` argument makes ("" when the argument is not one whole variable).
std::string made_name(std::string_view arg) {
  const auto names = referenced_variables(arg);
  if (names.size() != 1 || arg.empty() || arg.front() != '$') return "";
  return names.front();
}

// Named captures of a regex anywhere in `text`: (?<name>...), (?P<name>...), (?'name'...).
void add_captures(std::string_view text, std::set<std::string>& out) {
  for (std::size_t p = text.find("(?"); p != std::string_view::npos; p = text.find("(?", p + 2)) {
    std::size_t q = p + 2;
    if (q < text.size() && text[q] == 'P') ++q;
    if (q >= text.size() || (text[q] != '<' && text[q] != '\'')) continue;
    const char close = text[q] == '<' ? '>' : '\'';
    const std::size_t end = text.find(close, q + 1);
    if (end == std::string_view::npos || end == q + 1) continue;
    const std::string_view name = text.substr(q + 1, end - q - 1);
    if (std::all_of(name.begin(), name.end(), name_char)) out.insert(lower(name));
  }
}

// Modules whose variables were measured (none of them adds one to http or stream beyond the
// lists above): stream, mail, and Debian's lua with its ndk.
bool measured_module(std::string_view name) {
  return name == "stream" || name == "mail" || name == "lua" || name == "ndk" ||
         name == "ngx_stream_module" || name == "ngx_mail_module" || name == "ndk_http_module" ||
         name == "ngx_http_lua_module";
}

defined_variables build(const engine::context& ctx, const config::directive& block) {
  defined_variables v;
  const auto& m = ctx.model();
  if (m.cfg)
    for (const auto& d : m.cfg->root)
      if (d.name == "load_module" && !d.args.empty() &&
          !measured_module(directives::module_of_load(d.args[0].value())))
        v.complete = false;
  for (const auto& mod : ctx.options().modules)
    if (!measured_module(mod)) v.complete = false;
  static const std::set<std::string_view> first_arg_makers = {
      "set",        "perl_set",         "js_set",         "js_var", "auth_request_set",
      "set_by_lua", "set_by_lua_block", "set_by_lua_file"};
  walk(block.block, [&](const config::directive& d) {
    const std::string_view name = d.name.view();
    for (const auto& a : d.args) add_captures(a.value(), v.names);
    auto make = [&](std::size_t i) {
      if (i < d.args.size())
        if (auto n = made_name(d.args[i].value()); !n.empty()) v.names.insert(n);
    };
    if (!name.empty() && name.front() == '$') {
      if (auto n = made_name(name); !n.empty()) v.names.insert(n);
    } else if (name == "map" || name == "split_clients") {
      make(1);
    } else if (name == "geo") {
      make(d.args.size() - 1);
    } else if (first_arg_makers.count(name) || name.starts_with("set_")) {
      make(0);
    } else if (!directives::find(name)) {
      for (std::size_t i = 0; i < d.args.size(); ++i) make(i);
    }
  });
  return v;
}

}  // namespace

std::vector<std::string> referenced_variables(std::string_view value) {
  std::vector<std::string> out;
  for (std::size_t p = value.find('$'); p != std::string_view::npos; p = value.find('$', p)) {
    ++p;
    if (p < value.size() && value[p] == '{') {
      const std::size_t end = value.find('}', p);
      if (end == std::string_view::npos) break;
      const auto name = value.substr(p + 1, end - p - 1);
      if (!name.empty() && !std::isdigit(static_cast<unsigned char>(name.front())))
        out.push_back(lower(name));
      p = end + 1;
      continue;
    }
    if (p < value.size() && std::isdigit(static_cast<unsigned char>(value[p]))) continue;
    std::size_t end = p;
    while (end < value.size() && name_char(value[end])) ++end;
    if (end > p) out.push_back(lower(value.substr(p, end - p)));
    p = end;
  }
  return out;
}

bool builtin_variable(std::string_view name, model::context_kind c) {
  auto in = [&](const auto& names, const auto& prefixes) {
    return std::find(names.begin(), names.end(), name) != names.end() ||
           std::any_of(prefixes.begin(), prefixes.end(),
                       [&](std::string_view p) { return name.starts_with(p); });
  };
  switch (c) {
    case model::context_kind::http:
      return in(http_builtin, http_prefixes);
    case model::context_kind::stream:
      return in(stream_builtin, stream_prefixes);
    case model::context_kind::mail:
      return false;
  }
  return false;
}

bool defined_variables::known(const std::string& name, model::context_kind c) const {
  return !complete || names.count(name) > 0 || builtin_variable(name, c);
}

const defined_variables& variables_of(const engine::context& ctx, const config::directive& block) {
  using by_block = std::map<const config::directive*, defined_variables>;
  const auto& all = ctx.shared<by_block>("variables::defined", [&] {
    by_block out;
    if (ctx.model().cfg)
      for (const auto& d : ctx.model().cfg->root)
        if ((d.name == "http" || d.name == "stream") && d.has_block) out[&d] = build(ctx, d);
    return out;
  });
  static const defined_variables unknown_block{false, {}};
  const auto it = all.find(&block);
  return it == all.end() ? unknown_block : it->second;
}

}  // namespace ngxtls::rules
