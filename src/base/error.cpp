#include "base/error.hpp"

namespace ngxtls {

file_path::file_path(std::string s)
    : p_(s.empty() ? nullptr : std::make_shared<const std::string>(std::move(s))) {}
file_path::file_path(std::string_view s) : file_path(std::string(s)) {}
file_path::file_path(const char* s) : file_path(std::string(s ? s : "")) {}

const std::string& file_path::empty_path() noexcept {
  static const std::string empty;
  return empty;
}

std::string to_string(const source_location& where) {
  std::string out = where.file.str();
  if (where.line != 0) {
    out += ':' + std::to_string(where.line);
    if (where.column != 0) out += ':' + std::to_string(where.column);
  }
  return out;
}

static std::string format_what(const source_location& where, const std::string& message) {
  return to_string(where) + ": " + message;
}

input_error::input_error(source_location where, std::string message,
                         std::vector<source_location> include_chain)
    : std::runtime_error(format_what(where, message)),
      where_(std::move(where)),
      message_(std::move(message)),
      chain_(std::move(include_chain)) {}

}  // namespace ngxtls
