#pragma once
// lint --fix: turn the edits of findings into new file contents and a unified diff.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/tree.hpp"
#include "engine/finding.hpp"

namespace ngxtls::engine {

/// Byte offset of 1-based (line, column) in `content`; nullopt past the end.
std::optional<std::size_t> offset_of(std::string_view content, std::uint32_t line,
                                     std::uint32_t column);

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
  /// Findings skipped because their fix, re-parsed, would not parse or would put a directive
  /// outside the block it belongs in ("RULE at FILE:LINE:COL: why").
  std::vector<std::string> refused;
  /// Indices into the findings given of those with edits that were not applied (conflicts
  /// and refused): they stay findings.
  std::set<std::size_t> unfixed;
};

/// Why applying the sorted, non-overlapping `edits` to `old_text` would not give the config
/// they mean: the result does not parse, or a directive written by an edit with an anchor does
/// not sit in the same block as the anchor directive. "" when they are fine. `path` names the
/// file in parse errors.
std::string misplaced_edit(std::string_view old_text, const std::vector<text_edit>& edits,
                           const std::string& path);

/// Applies the edits of `findings` to the files of `cfg`. Identical edits (one directive
/// reached through two include sites) apply once; a finding whose edits overlap another's is
/// skipped and named in `conflicts`. Diff paths are `display_path(file)` prefixed with a/ b/.
fix_result apply_fixes(const config::config& cfg, const std::vector<finding>& findings);

/// Path for a diff header: relative to the working directory when the file is below it,
/// else as given.
std::string display_path(const std::string& path);

}  // namespace ngxtls::engine
