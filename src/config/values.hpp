#pragma once
// nginx's value syntax, by nginx's own rules: time and size values, quoting a token so that
// nginx reads it back, server-name matching, the lines nginx logs, ports. The one definition
// the rules, check, the sandbox and harden use; each is tested against what a real nginx
// accepts (tests/integration/test_nginx_values.cpp, docs/nginx-facts.md#value-syntax).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ngxtls::config {

/// A time value of a seconds directive (ngx_conf_set_sec_slot: ssl_session_timeout, ...) in
/// seconds, read as ngx_parse_time(line, 1) reads it (src/core/ngx_parse.c): numbers with units
/// y (365 days), M (30 days), w, d, h, m, s, each at most once and from the largest down; a
/// space after a unit may precede the next part; a number with no unit is seconds ("1h30" is
/// 5400 s); "ms" is refused. nullopt for what nginx refuses ("", "5x", "1m1h", "1ms") and
/// values past 2^63-1 s.
std::optional<std::int64_t> parse_time_s(std::string_view text);

/// A time value of a milliseconds directive (ngx_conf_set_msec_slot: keepalive_timeout,
/// resolver_timeout, ...) in milliseconds, as ngx_parse_time(line, 0): units w, d, h, m, s and
/// ms (y and M are refused), a bare number is seconds.
std::optional<std::int64_t> parse_time_ms(std::string_view text);

/// A size (ngx_parse_size: ngx_conf_set_size_slot, the size in `ssl_session_cache
/// shared:NAME:SIZE`) in bytes: digits, optionally followed by one of k K (1024) m M (1024^2).
/// nullopt for what nginx refuses ("", "1g", "1 k", "-1", past 2^63-1).
std::optional<std::int64_t> parse_size_bytes(std::string_view text);

/// An offset (ngx_parse_offset: ngx_conf_set_off_slot, client_max_body_size, ...) in bytes:
/// as parse_size_bytes, and also g G (1024^3).
std::optional<std::int64_t> parse_offset_bytes(std::string_view text);

/// `arg` as one double-quoted token that nginx's tokenizer (ngx_conf_read_token) reads back as
/// exactly `arg`: `"` and `\` escaped with `\`, newline, tab and carriage return as `\n`, `\t`,
/// `\r`. (A `$` still starts a variable where the directive takes variables: nginx has no escape
/// for it.)
std::string quote_token(std::string_view arg);

/// `arg` as written when nginx reads it as one plain token (not empty, no whitespace or control
/// byte, none of `; { } " ' \ # $`), else quote_token(arg): for text an operator reads.
std::string token_for_reading(std::string_view arg);

/// The kinds of server_name (ngx_http_core_server_name, ngx_http_server_names).
enum class server_name_kind {
  exact,     ///< "www.example.com" (also "" and "_", which match as written)
  leading,   ///< "*.example.com": any name ending in ".example.com"
  domain,    ///< ".example.com": "example.com" and any name ending in ".example.com"
  trailing,  ///< "www.example.*": "www.example." followed by at least one byte
  regex      ///< "~REGEX": PCRE, caseless, searched in the name
};

/// What kind of server_name `pattern` is.
server_name_kind kind_of_server_name(std::string_view pattern);

/// Whether the host name `host` (an SNI or Host name) selects a server named `pattern`, as
/// nginx matches it: case-insensitively (nginx lower-cases both); wildcards as
/// server_name_kind says; a regular expression compiled with PCRE2 (the library nginx links)
/// caseless and searched in `host` (anchor it with ^ and $, as nginx's docs do). A regex that
/// does not compile matches nothing (nginx refuses the config). nginx's precedence among
/// several servers (exact, longest leading wildcard, longest trailing wildcard, first regex) is
/// the caller's: this answers one name.
bool server_name_matches(std::string_view pattern, std::string_view host);

/// A host name a client can send that `pattern` selects ("ngxtls-probe.example.com" for
/// "*.example.com", "example.com" for ".example.com", "www.example.test" for "www.example.*",
/// `pattern` itself for an exact name); nullopt for a regex, "", "_" and names holding `$`, or a
/// `*` that is not one of the wildcards.
std::optional<std::string> name_selecting(std::string_view pattern);

/// One line nginx logs to stderr or its error log (ngx_log_error_core):
/// `nginx: [LEVEL] MESSAGE in FILE:LINE`, or with a time stamp
/// `YYYY/MM/DD HH:MM:SS [LEVEL] PID#TID: MESSAGE`; `nginx -t`'s closing lines
/// ("nginx: configuration file X test failed") are not log lines.
struct nginx_log_line {
  std::string level;       ///< "emerg", "alert", "crit", "error", "warn", "notice", "info", "debug"
  std::string message;     ///< the text after the level (and the PID#TID: of a time-stamped line)
  std::string file;        ///< from a trailing " in FILE:LINE"; empty when absent
  std::uint32_t line = 0;  ///< its line; 0 when absent
};

/// `text` read as nginx_log_line; nullopt when it is not a log line.
std::optional<nginx_log_line> parse_nginx_log_line(std::string_view text);

/// The log lines of `text` (what `nginx -t` printed on stderr, an error log's content), in
/// order; the other lines (`nginx -t`'s closing lines) are skipped.
std::vector<nginx_log_line> parse_nginx_log_lines(std::string_view text);

/// `l`'s message with the place nginx wrote after it (" in FILE:LINE"); the message alone when
/// nginx named no place.
std::string message_with_place(const nginx_log_line& l);

/// True when `a` and `b` are equal but for ASCII case (nginx compares names, header values and
/// upstream names so: ngx_strncasecmp).
bool equal_ignoring_case(std::string_view a, std::string_view b);

/// A port as nginx's listen reads it (ngx_parse_url, ngx_atoi: digits only, leading zeros
/// allowed, 1..65535); nullopt otherwise.
std::optional<int> parse_port(std::string_view text);

/// The port of "ip:port", "[v6]:port" or "host:port" (the form of a probed address); 0 when
/// there is none.
int port_of_address(std::string_view address);

}  // namespace ngxtls::config
