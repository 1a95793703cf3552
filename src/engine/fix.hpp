#pragma once
// lint --fix: turn the edits of findings into new file contents and a unified diff.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/tree.hpp"
#include "engine/finding.hpp"

namespace ngxtls::engine {

/// Byte offset of 1-based (line, column) in `content`; nullopt past the end.
std::optional<std::size_t> offset_of(std::string_view content, std::uint32_t line, std::uint32_t column);

/// An edit that replaces a whole simple directive (name through its `;`) with `text`
/// (which should end in `;`). nullopt for block directives, Lua blocks, or when the `;`
/// cannot be found.
std::optional<text_edit> replace_directive(const config::config& cfg, const config::directive& d,
                                           const std::string& text);

/// An edit that inserts `text` on a new line after a simple directive's `;`, indented like
/// the directive. nullopt as for replace_directive.
std::optional<text_edit> insert_after(const config::config& cfg, const config::directive& d,
                                      const std::string& text);

/// The outcome of applying the edits of some findings.
struct fix_result {
  std::map<std::string, std::string> files;  ///< path -> new content, for changed files only
  std::string diff;                          ///< unified diff (a/PATH b/PATH, for patch -p1)
  std::size_t applied = 0;                   ///< findings whose edits were applied
  std::vector<std::string> conflicts;        ///< findings skipped: their edits overlap earlier ones
};

/// Applies the edits of `findings` to the files of `cfg`. Identical edits (one directive
/// reached through two include sites) apply once; a finding whose edits overlap another's is
/// skipped and named in `conflicts`. Diff paths are `display_path(file)` prefixed with a/ b/.
fix_result apply_fixes(const config::config& cfg, const std::vector<finding>& findings);

/// Path for a diff header: relative to the working directory when the file is below it,
/// else as given.
std::string display_path(const std::string& path);

}  // namespace ngxtls::engine
