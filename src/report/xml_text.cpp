#include "report/xml_text.hpp"

#include "report/terminal_text.hpp"

namespace ngxtls::report {

std::string xml_text(std::string_view text, bool keep_newlines) {
  const std::string safe = terminal_safe(text, true);
  std::string out;
  out.reserve(safe.size() + safe.size() / 8);
  for (char c : safe) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\n':
        out += keep_newlines ? "\n" : "&#10;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace ngxtls::report
