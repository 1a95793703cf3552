#include "config/edits.hpp"

#include <algorithm>
#include <tuple>

namespace ngxtls::config {

std::string apply_edits(std::string_view text, std::vector<byte_edit> edits,
                        replaced_newlines newlines) {
  std::stable_sort(edits.begin(), edits.end(), [](const byte_edit& a, const byte_edit& b) {
    return std::tie(a.offset, a.length) < std::tie(b.offset, b.length);
  });
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  for (const auto& e : edits) {
    const std::size_t begin = std::min(e.offset, text.size());
    const std::size_t end = std::min(begin + e.length, text.size());
    if (begin < at) continue;
    out.append(text.substr(at, begin - at));
    out += e.replacement;
    if (newlines == replaced_newlines::kept)
      out.append(static_cast<std::size_t>(
                     std::count(text.begin() + static_cast<std::ptrdiff_t>(begin),
                                text.begin() + static_cast<std::ptrdiff_t>(end), '\n')),
                 '\n');
    at = end;
  }
  out.append(text.substr(at));
  return out;
}

}  // namespace ngxtls::config
