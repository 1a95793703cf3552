#include "sandbox/directive_policy.hpp"

#include <algorithm>
#include <iterator>

namespace ngxtls::sandbox {

namespace {

using match = directive_policy::match;
using S = in_server;
using W = in_whole_config;

constexpr std::string_view k_not_readable = "";
constexpr std::string_view k_key_log_server = "it writes TLS secrets to a file outside the sandbox";
constexpr std::string_view k_other_module =
    "not a directive of nginx's own ssl modules: the sandbox runs no code a config names (Lua, "
    "Perl, njs) and no third-party module";
constexpr std::string_view k_code = "code the sandbox does not run; its module is not loaded";

constexpr directive_policy row(std::string_view name, in_server server,
                               in_whole_config whole = in_whole_config::kept,
                               bool repeatable = false, std::string_view server_reason = "",
                               std::string_view whole_reason = "") {
  directive_policy p;
  p.pattern = name;
  p.server = server;
  p.whole = whole;
  p.repeatable = repeatable;
  p.server_reason = server_reason;
  p.whole_reason = whole_reason;
  return p;
}

// A pattern of names: the whole-config test only (see server_policy).
constexpr directive_policy pattern(std::string_view text, match how, in_whole_config whole,
                                   std::string_view whole_reason = "") {
  directive_policy p = row(text, in_server::not_copied, whole, false, "", whole_reason);
  p.how = how;
  return p;
}

// The directives of nginx's own ngx_http_ssl_module and ngx_stream_ssl_module (nginx 1.22 to
// 1.27), which the TLS servers carry, then what the whole-config test changes. ssl_key_log is
// left out of both: it writes TLS secrets to a file outside the run.
// clang-format off
constexpr directive_policy k_table[] = {
    row("ssl_certificate",           S::certificate, W::file_translated, true),
    row("ssl_certificate_key",       S::certificate, W::file_translated, true),
    row("ssl_password_file",         S::file_copied, W::file_translated, false, k_not_readable),
    row("ssl_dhparam",               S::file_copied, W::file_translated, false,
     "no DHE cipher suites in the sandbox"),
    row("ssl_ecdh_curve",            S::kept),
    row("ssl_protocols",             S::kept),
    row("ssl_ciphers",               S::kept),
    row("ssl_buffer_size",           S::kept),
    row("ssl_verify_client",         S::kept),
    row("ssl_verify_depth",          S::kept),
    row("ssl_client_certificate",    S::client_ca,   W::file_translated),
    row("ssl_trusted_certificate",   S::trusted_ca,  W::file_translated),
    row("ssl_prefer_server_ciphers", S::kept),
    row("ssl_session_cache",         S::kept),
    row("ssl_session_tickets",       S::kept),
    row("ssl_session_ticket_key",    S::ticket_key,  W::file_translated, true),
    row("ssl_session_timeout",       S::kept),
    row("ssl_crl",                   S::file_copied, W::file_translated, false, k_not_readable),
    row("ssl_ocsp",                  S::kept),
    row("ssl_ocsp_responder",        S::responder),
    row("ssl_ocsp_cache",            S::kept),
    row("ssl_stapling",              S::kept),
    row("ssl_stapling_file",         S::file_copied, W::file_translated, false,
     "staple presence not tested"),
    row("ssl_stapling_responder",    S::responder),
    row("ssl_stapling_verify",       S::kept),
    row("ssl_early_data",            S::kept),
    row("ssl_conf_command",          S::kept,        W::kept, true),
    row("ssl_reject_handshake",      S::kept),
    row("ssl_handshake_timeout",     S::kept),
    row("ssl_alpn",                  S::kept),
    row("ssl_certificate_cache",     S::kept),
    // Kept as written, so that nginx -t judges it: deprecated up to 1.25.0 ([warn]), unknown from
    // 1.25.1 (rejected, then left out; the listens stay TLS).
    row("ssl",                       S::kept),
    row("ssl_key_log",               S::left_out,    W::left_out, false, k_key_log_server,
     "it writes TLS secrets to a file"),
    row("ssl_engine",                S::left_out,    W::left_out, false, k_other_module,
     "an OpenSSL engine is code"),
    // ngx_http_v3_module's settings of a QUIC server (nginx 1.25.0 and later). quic_bpf is a
    // main-context directive and stays out: the sandbox runs unprivileged, without BPF.
    row("http3",                     S::kept),
    row("http3_hq",                  S::kept),
    row("http3_max_concurrent_streams", S::kept),
    row("http3_stream_buffer_size",  S::kept),
    row("quic_retry",                S::kept),
    row("quic_gso",                  S::kept),
    row("quic_active_connection_id_limit", S::kept),
    row("quic_host_key",             S::file_copied, W::file_translated, false, k_not_readable),
    row("resolver",                  S::resolver,    W::hosts_loopback),
    row("resolver_timeout",          S::kept),
    // What the whole-config test changes: what acts on the host (users, pid and lock files,
    // modules, code) is left out, paths nginx writes go into the run directory, files it reads
    // are the sandbox's copies, host names it resolves while it loads the config are loopback.
    row("include",                   S::not_copied,  W::include_mirrored),
    row("load_module",               S::not_copied,  W::module_left_out, false, "",
     "the sandbox loads no module a config names"),
    row("user",                      S::not_copied,  W::left_out),
    row("pid",                       S::not_copied,  W::left_out),
    row("lock_file",                 S::not_copied,  W::left_out),
    row("working_directory",         S::not_copied,  W::left_out),
    row("google_perftools_profiles", S::not_copied,  W::left_out),
    row("error_log",                 S::not_copied,  W::log_in_run),
    row("access_log",                S::not_copied,  W::log_in_run),
    row("client_body_temp_path",     S::not_copied,  W::path_in_run),
    row("proxy_temp_path",           S::not_copied,  W::path_in_run),
    row("fastcgi_temp_path",         S::not_copied,  W::path_in_run),
    row("uwsgi_temp_path",           S::not_copied,  W::path_in_run),
    row("scgi_temp_path",            S::not_copied,  W::path_in_run),
    row("proxy_cache_path",          S::not_copied,  W::path_in_run),
    row("fastcgi_cache_path",        S::not_copied,  W::path_in_run),
    row("uwsgi_cache_path",          S::not_copied,  W::path_in_run),
    row("scgi_cache_path",           S::not_copied,  W::path_in_run),
    row("listen",                    S::not_copied,  W::unix_socket),
    row("proxy_pass",                S::not_copied,  W::hosts_loopback),
    row("grpc_pass",                 S::not_copied,  W::hosts_loopback),
    row("uwsgi_pass",                S::not_copied,  W::hosts_loopback),
    row("scgi_pass",                 S::not_copied,  W::hosts_loopback),
    row("fastcgi_pass",              S::not_copied,  W::hosts_loopback),
    row("memcached_pass",            S::not_copied,  W::hosts_loopback),
    // An upstream's server (host names) or a server block (stand-in certificate).
    row("server",                    S::not_copied,  W::server_block),
    row("http",                      S::not_copied,  W::http_block),
    // Code: its modules are never loaded, so nginx would stop at the first of them as an
    // unknown directive; left out so that the rest is tested.
    pattern("lua",                       match::contains, W::code_left_out, k_code),
    pattern("perl",                      match::prefix,   W::code_left_out, k_code),
    pattern("js_",                       match::prefix,   W::code_left_out, k_code),
    pattern("njs",                       match::prefix,   W::code_left_out, k_code),
    // Files nginx reads at `nginx -t` in every module that has them (proxy_ssl_, grpc_ssl_,
    // uwsgi_ssl_, stream and mail).
    pattern("_certificate",              match::suffix,   W::file_translated),
    pattern("_certificate_key",          match::suffix,   W::file_translated),
    pattern("_password_file",            match::suffix,   W::file_translated),
    pattern("_dhparam",                  match::suffix,   W::file_translated),
    pattern("_trusted_certificate",      match::suffix,   W::file_translated),
    pattern("_client_certificate",       match::suffix,   W::file_translated),
    pattern("_crl",                      match::suffix,   W::file_translated),
    pattern("_stapling_file",            match::suffix,   W::file_translated),
    pattern("_session_ticket_key",       match::suffix,   W::file_translated),
};
// clang-format on

// An ssl_* directive without a row: another module's (lua-nginx-module's ssl_*_by_lua*,
// ngx_stream_ssl_preread_module) or unknown.
constexpr directive_policy k_other_ssl_directive =
    row("ssl_", S::left_out, W::kept, false, k_other_module);
constexpr directive_policy k_no_row = row("", S::not_copied);

bool matches(const directive_policy& p, std::string_view name) {
  switch (p.how) {
    case match::name:
      return name == p.pattern;
    case match::prefix:
      return name.substr(0, p.pattern.size()) == p.pattern;
    case match::suffix:
      return name.size() > p.pattern.size() &&
             name.substr(name.size() - p.pattern.size()) == p.pattern;
    case match::contains:
      return name.find(p.pattern) != std::string_view::npos;
  }
  return false;
}

}  // namespace

const directive_policy& server_policy(std::string_view name) {
  for (const auto& p : k_table)
    if (p.how == match::name && p.pattern == name) return p;
  return name.substr(0, 4) == "ssl_" ? k_other_ssl_directive : k_no_row;
}

const directive_policy& whole_config_policy(std::string_view name) {
  for (const auto& p : k_table)
    if (p.how == match::name && p.pattern == name) return p;
  for (const auto& p : k_table)
    if (p.how != match::name && matches(p, name)) return p;
  return k_no_row;
}

}  // namespace ngxtls::sandbox
