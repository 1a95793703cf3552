#include "config/values.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <memory>

namespace ngxtls::config {

namespace {

constexpr std::int64_t max_int = std::numeric_limits<std::int64_t>::max();

// ngx_parse_time (src/core/ngx_parse.c): units from the largest down, each once; `is_sec`
// false counts milliseconds and starts below M.
std::optional<std::int64_t> parse_time(std::string_view text, bool is_sec) {
  enum step { start, year, month, week, day, hour, min, sec, msec, last };
  int at = is_sec ? start : month;
  std::int64_t value = 0, total = 0;
  bool valid = false;
  std::size_t p = 0;
  while (p < text.size()) {
    const char c = text[p];
    if (c >= '0' && c <= '9') {
      if (value > (max_int - (c - '0')) / 10) return std::nullopt;
      value = value * 10 + (c - '0');
      valid = true;
      ++p;
      continue;
    }
    ++p;
    std::int64_t scale = 1;
    int next = 0;
    switch (c) {
      case 'y':
        next = year;
        scale = 365LL * 86400;
        if (at > start) return std::nullopt;
        break;
      case 'M':
        next = month;
        scale = 30LL * 86400;
        break;
      case 'w':
        next = week;
        scale = 7LL * 86400;
        break;
      case 'd':
        next = day;
        scale = 86400;
        break;
      case 'h':
        next = hour;
        scale = 3600;
        break;
      case 'm':
        if (p < text.size() && text[p] == 's') {
          if (is_sec || at >= msec) return std::nullopt;
          ++p;
          next = msec;
          scale = 1;
          break;
        }
        next = min;
        scale = 60;
        break;
      case 's':
        next = sec;
        break;
      case ' ':
        // A number followed by a space is seconds; nothing may follow but more digits.
        if (at >= sec) return std::nullopt;
        at = last;
        next = last;
        break;
      default:
        return std::nullopt;
    }
    if (next != last && next != year && at >= next) return std::nullopt;
    at = next;
    if (next != msec && !is_sec) scale *= 1000;
    if (value > max_int / scale) return std::nullopt;
    value *= scale;
    if (total > max_int - value) return std::nullopt;
    total += value;
    value = 0;
    while (p < text.size() && text[p] == ' ') ++p;
  }
  if (!valid) return std::nullopt;
  if (!is_sec) {
    if (value > max_int / 1000) return std::nullopt;
    value *= 1000;
  }
  if (total > max_int - value) return std::nullopt;
  return total + value;
}

// ngx_parse_size / ngx_parse_offset: one optional unit letter at the end, digits before it.
std::optional<std::int64_t> parse_scaled(std::string_view text, bool giga) {
  if (text.empty()) return std::nullopt;
  std::int64_t scale = 1;
  switch (text.back()) {
    case 'k':
    case 'K':
      scale = 1024;
      break;
    case 'm':
    case 'M':
      scale = 1024 * 1024;
      break;
    case 'g':
    case 'G':
      if (!giga) break;
      scale = 1024LL * 1024 * 1024;
      break;
    default:
      break;
  }
  if (scale != 1) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  std::int64_t n = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    if (n > (max_int - (c - '0')) / 10) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n > max_int / scale) return std::nullopt;
  return n * scale;
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool equal_caseless(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

bool ends_with_caseless(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && equal_caseless(s.substr(s.size() - suffix.size()), suffix);
}

bool regex_search_caseless(std::string_view pattern, std::string_view subject) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  std::unique_ptr<pcre2_code, decltype(&pcre2_code_free)> code(
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_CASELESS,
                    &error, &offset, nullptr),
      &pcre2_code_free);
  if (!code) return false;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(code.get(), nullptr), &pcre2_match_data_free);
  if (!match) return false;
  return pcre2_match(code.get(), reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0,
                     match.get(), nullptr) >= 0;
}

}  // namespace

std::optional<std::int64_t> parse_time_s(std::string_view text) {
  return parse_time(text, true);
}

std::optional<std::int64_t> parse_time_ms(std::string_view text) {
  return parse_time(text, false);
}

std::optional<std::int64_t> parse_size_bytes(std::string_view text) {
  return parse_scaled(text, false);
}

std::optional<std::int64_t> parse_offset_bytes(std::string_view text) {
  return parse_scaled(text, true);
}

std::string quote_token(std::string_view arg) {
  std::string out = "\"";
  for (const char c : arg) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

std::string token_for_reading(std::string_view arg) {
  bool plain = !arg.empty();
  for (const char c : arg)
    if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) == 0x7f ||
        std::string_view(";{}\"'\\#$").find(c) != std::string_view::npos)
      plain = false;
  return plain ? std::string(arg) : quote_token(arg);
}

server_name_kind kind_of_server_name(std::string_view p) {
  if (!p.empty() && p[0] == '~') return server_name_kind::regex;
  if (p.size() > 2 && p.compare(0, 2, "*.") == 0) return server_name_kind::leading;
  if (p.size() > 1 && p[0] == '.') return server_name_kind::domain;
  if (p.size() > 2 && p.compare(p.size() - 2, 2, ".*") == 0) return server_name_kind::trailing;
  return server_name_kind::exact;
}

bool server_name_matches(std::string_view pattern, std::string_view host) {
  switch (kind_of_server_name(pattern)) {
    case server_name_kind::exact:
      return equal_caseless(pattern, host);
    case server_name_kind::leading:
      // "*.example.com": at least one byte before ".example.com".
      return host.size() > pattern.size() - 1 && ends_with_caseless(host, pattern.substr(1));
    case server_name_kind::domain:
      return equal_caseless(host, pattern.substr(1)) ||
             (host.size() > pattern.size() && ends_with_caseless(host, pattern));
    case server_name_kind::trailing: {
      const std::string_view prefix = pattern.substr(0, pattern.size() - 1);  // "www.example."
      return host.size() > prefix.size() && equal_caseless(host.substr(0, prefix.size()), prefix);
    }
    case server_name_kind::regex:
      return regex_search_caseless(pattern.substr(1), host);
  }
  return false;
}

std::optional<std::string> name_selecting(std::string_view p) {
  if (p.empty() || p == "_" || p.find('$') != std::string_view::npos) return std::nullopt;
  std::string name;
  switch (kind_of_server_name(p)) {
    case server_name_kind::exact:
      name = std::string(p);
      break;
    case server_name_kind::leading:
      name = "ngxtls-probe" + std::string(p.substr(1));
      break;
    case server_name_kind::domain:
      name = std::string(p.substr(1));
      break;
    case server_name_kind::trailing:
      name = std::string(p.substr(0, p.size() - 1)) + "test";
      break;
    case server_name_kind::regex:
      return std::nullopt;
  }
  // A `*` left over ("a*b", "*.a*b") is no wildcard nginx knows: no name a client sends.
  if (name.find('*') != std::string::npos) return std::nullopt;
  return name;
}

std::optional<nginx_log_line> parse_nginx_log_line(std::string_view text) {
  static constexpr std::string_view levels[] = {"emerg", "alert",  "crit", "error",
                                                "warn",  "notice", "info", "debug"};
  for (const auto level : levels) {
    const std::string tag = "[" + std::string(level) + "] ";
    const auto at = text.find(tag);
    if (at == std::string_view::npos) continue;
    nginx_log_line out;
    out.level = std::string(level);
    std::string_view msg = text.substr(at + tag.size());
    // A time-stamped line: "PID#TID: " after the level.
    if (at > 0 && text[0] != 'n') {
      const auto hash = msg.find('#');
      const auto colon = msg.find(": ");
      if (hash != std::string_view::npos && colon != std::string_view::npos && hash < colon &&
          msg.find_first_not_of("0123456789#") == colon)
        msg.remove_prefix(colon + 2);
    }
    // " in FILE:LINE" at the end: where nginx read the directive.
    if (const auto in = msg.rfind(" in "); in != std::string_view::npos) {
      const std::string_view where = msg.substr(in + 4);
      const auto colon = where.rfind(':');
      if (colon != std::string_view::npos && colon > 0 && colon + 1 < where.size() &&
          where.substr(colon + 1).find_first_not_of("0123456789") == std::string_view::npos &&
          where.size() - colon - 1 <= 9) {
        out.file = std::string(where.substr(0, colon));
        out.line = static_cast<std::uint32_t>(std::stoul(std::string(where.substr(colon + 1))));
        msg = msg.substr(0, in);
      }
    }
    out.message = std::string(msg);
    return out;
  }
  return std::nullopt;
}

std::vector<nginx_log_line> parse_nginx_log_lines(std::string_view text) {
  std::vector<nginx_log_line> out;
  while (!text.empty()) {
    const auto end = text.find('\n');
    if (auto l = parse_nginx_log_line(text.substr(0, end))) out.push_back(std::move(*l));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

std::string message_with_place(const nginx_log_line& l) {
  if (l.file.empty()) return l.message;
  return l.message + " in " + l.file + ":" + std::to_string(l.line);
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::optional<int> parse_port(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int n = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
    if (n > 65535) return std::nullopt;
  }
  if (n < 1 || n > 65535) return std::nullopt;
  return n;
}

int port_of_address(std::string_view address) {
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos) return 0;
  return parse_port(address.substr(colon + 1)).value_or(0);
}

}  // namespace ngxtls::config
