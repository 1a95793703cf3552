#pragma once
// Text inside XML 1.0 attributes and elements, for the XML report formats (JUnit, checkstyle).

#include <string>
#include <string_view>

namespace ngxtls::report {

/// `text` as XML character data or an attribute value: & < > " ' as entities, and what XML 1.0
/// cannot hold at all (C0 controls but tab and line breaks, DEL, C1 controls, invalid UTF-8:
/// config bytes need not be text) as the \xNN escapes of terminal_safe(). Line breaks are kept
/// (`keep_newlines`) in element text and written as &#10; in attributes otherwise.
std::string xml_text(std::string_view text, bool keep_newlines = false);

}  // namespace ngxtls::report
