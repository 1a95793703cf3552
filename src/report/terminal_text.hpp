#pragma once
// Text from a config or a peer, made safe to print on a terminal.

#include <string>
#include <string_view>

namespace ngxtls::report {

/// `text` with every byte a terminal would act on written as `\xNN` (lower-case hex): C0
/// controls (ESC, NUL, CR, BEL, ...) except tab, DEL, the UTF-8 encodings of the C1 controls
/// (U+0080..U+009F, e.g. CSI) and bytes that are not part of valid UTF-8 (a terminal in an
/// 8-bit mode reads 0x9b as CSI). Line feeds are kept when `keep_newlines` (multi-line fix
/// snippets), else escaped too. Other UTF-8 passes through unchanged.
std::string terminal_safe(std::string_view text, bool keep_newlines = false);

}  // namespace ngxtls::report
