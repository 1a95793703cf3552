#pragma once
// Changes to a config file's bytes, applied in one place: lint --fix (engine/fix.cpp) writes
// the operator's files with them, and the sandbox (sandbox/whole_config.cpp) mirrors the
// operator's files with them for nginx -t.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ngxtls::config {

/// One change to a file's bytes: `length` bytes at `offset` replaced by `replacement` (an
/// insertion when `length` is 0).
struct byte_edit {
  std::size_t offset = 0;  ///< byte offset into the file
  std::size_t length = 0;  ///< bytes replaced (0 = insert)
  std::string replacement;
};

/// What becomes of the newlines in the bytes an edit replaces.
enum class replaced_newlines {
  dropped,  ///< replaced with the rest: the file reads as the edits say (lint --fix)
  kept,     ///< written after the replacement, so that every later line keeps its number (the
            ///< sandbox: nginx's messages about the edited file then name the operator's lines)
};

/// `text` with `edits` applied, in the order of their offsets (an insertion before a
/// replacement at the same offset; edits at the same offset and length in the order given). An
/// edit that begins inside the bytes an earlier one replaced is skipped: the earlier one wins.
/// Offsets past the end of `text` are read as its end.
std::string apply_edits(std::string_view text, std::vector<byte_edit> edits,
                        replaced_newlines newlines);

}  // namespace ngxtls::config
