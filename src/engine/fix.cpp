#include "engine/fix.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <tuple>

#include "base/error.hpp"
#include "config/edits.hpp"
#include "config/loader.hpp"

namespace ngxtls::engine {

std::optional<std::size_t> offset_of(std::string_view content, std::uint32_t line,
                                     std::uint32_t column) {
  if (line == 0 || column == 0) return std::nullopt;
  std::size_t pos = 0;
  for (std::uint32_t l = 1; l < line; ++l) {
    auto nl = content.find('\n', pos);
    if (nl == std::string_view::npos) return std::nullopt;
    pos = nl + 1;
  }
  pos += column - 1;
  if (pos > content.size()) return std::nullopt;
  return pos;
}

namespace {

// [start, end) of a simple directive: from its name to just past its `;`.
std::optional<std::pair<std::size_t, std::size_t>> span_of(const config::config& cfg,
                                                           const config::directive& d) {
  if (d.has_block || d.lua_body() || d.file >= cfg.files.size()) return std::nullopt;
  std::string_view content = cfg.files[d.file].content;
  if (d.offset > content.size()) return std::nullopt;
  const std::size_t start = d.offset;
  // The name's raw bytes end at the first byte nginx ends a token at (white space, `;`).
  std::size_t pos = start;
  if (pos < content.size() && (content[pos] == '"' || content[pos] == '\'')) {
    const char q = content[pos];
    for (++pos; pos < content.size() && content[pos] != q; ++pos)
      if (content[pos] == '\\') ++pos;
    ++pos;
  } else {
    while (pos < content.size() && content[pos] != ' ' && content[pos] != '\t' &&
           content[pos] != '\r' && content[pos] != '\n' && content[pos] != ';')
      ++pos;
  }
  if (!d.args.empty()) {
    const std::string_view raw = d.args.back().raw();
    if (raw.data() < content.data() || raw.data() > content.data() + content.size())
      return std::nullopt;
    pos = static_cast<std::size_t>(raw.data() - content.data()) + raw.size();
  }
  // Between the last token and `;` nginx allows only space and comments.
  while (pos < content.size()) {
    char c = content[pos];
    if (c == ';') return std::make_pair(start, pos + 1);
    if (c == '#') {
      auto nl = content.find('\n', pos);
      if (nl == std::string_view::npos) return std::nullopt;
      pos = nl + 1;
      continue;
    }
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return std::nullopt;
    ++pos;
  }
  return std::nullopt;
}

}  // namespace

std::optional<text_edit> replace_directive(const config::config& cfg, const config::directive& d,
                                           const std::string& text) {
  auto span = span_of(cfg, d);
  if (!span) return std::nullopt;
  return text_edit{cfg.files[d.file].path, span->first, span->second - span->first, text,
                   span->first};
}

std::optional<text_edit> insert_after(const config::config& cfg, const config::directive& d,
                                      const std::string& text) {
  auto span = span_of(cfg, d);
  if (!span) return std::nullopt;
  std::string_view content = cfg.files[d.file].content;
  auto line_start = content.rfind('\n', span->first == 0 ? 0 : span->first - 1);
  line_start = line_start == std::string_view::npos || span->first == 0 ? 0 : line_start + 1;
  std::string indent;
  for (std::size_t i = line_start; i < span->first && (content[i] == ' ' || content[i] == '\t');
       ++i)
    indent += content[i];
  const std::string& path = cfg.files[d.file].path;
  // After the directive's own line (keeping a trailing comment on it where it is), when only
  // space or a comment follows its `;`. When more follows on the line (`... ; } }` in a
  // one-line config), the rest of the line may close the block: the text goes on a line of
  // its own right after the `;`, so it stays in the directive's block.
  std::size_t rest = span->second;
  while (rest < content.size() &&
         (content[rest] == ' ' || content[rest] == '\t' || content[rest] == '\r'))
    ++rest;
  if (rest < content.size() && content[rest] != '\n' && content[rest] != '#')
    return text_edit{path, span->second, 0, "\n" + indent + text + "\n", span->first};
  auto eol = content.find('\n', span->second);
  if (eol == std::string_view::npos)
    return text_edit{path, content.size(), 0, "\n" + indent + text, span->first};
  return text_edit{path, eol + 1, 0, indent + text + "\n", span->first};
}

std::string display_path(const std::string& path) {
  std::error_code ec;
  auto cwd = std::filesystem::current_path(ec);
  if (ec) return path;
  auto abs = std::filesystem::absolute(path, ec).lexically_normal();
  auto rel = abs.lexically_relative(cwd);
  if (!rel.empty() && *rel.begin() != "..") return rel.string();
  return path;
}

namespace {

// Splits into lines, each keeping its '\n' (the last may lack it).
std::vector<std::string_view> lines_of(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto nl = s.find('\n', pos);
    std::size_t end = nl == std::string_view::npos ? s.size() : nl + 1;
    out.push_back(s.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

void emit_line(std::string& out, char tag, std::string_view line) {
  out += tag;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

// A unified diff of one file from its sorted, non-overlapping edits, with 3 lines of context.
std::string file_diff(const std::string& path, std::string_view old_text,
                      const std::vector<text_edit>& edits) {
  constexpr std::size_t context = 3;
  auto old_lines = lines_of(old_text);
  std::vector<std::size_t> starts;  // byte offset of each old line
  for (std::size_t i = 0, off = 0; i < old_lines.size(); off += old_lines[i].size(), ++i)
    starts.push_back(off);
  auto line_index = [&](std::size_t offset) -> std::size_t {
    auto it = std::upper_bound(starts.begin(), starts.end(), offset);
    return it == starts.begin() ? 0 : static_cast<std::size_t>(it - starts.begin()) - 1;
  };
  // Each edit touches old lines [first, last]; an insert at end of file touches none.
  struct region {
    std::size_t first, last_excl;  // old line range
    std::vector<const text_edit*> edits;
  };
  std::vector<region> regions;
  for (const auto& e : edits) {
    std::size_t first = e.offset >= old_text.size() ? old_lines.size() : line_index(e.offset);
    std::size_t last_excl = first;
    if (e.length > 0)
      last_excl = line_index(e.offset + e.length - 1) + 1;
    else if (first < old_lines.size() && e.offset != starts[first])
      last_excl = first + 1;
    if (e.offset >= old_text.size() && !old_lines.empty() && old_text.back() != '\n') {
      first = old_lines.size() - 1;  // appending to a last line without newline changes it
      last_excl = old_lines.size();
    }
    if (!regions.empty() && first <= regions.back().last_excl + 2 * context) {
      regions.back().last_excl = std::max(regions.back().last_excl, last_excl);
      regions.back().edits.push_back(&e);
    } else {
      regions.push_back({first, last_excl, {&e}});
    }
  }
  std::string out = "--- a/" + path + "\n+++ b/" + path + "\n";
  for (const auto& r : regions) {
    const std::size_t ctx_first = r.first > context ? r.first - context : 0;
    const std::size_t ctx_last = std::min(old_lines.size(), r.last_excl + context);
    // New text of the changed old lines.
    std::size_t region_start = r.first < starts.size() ? starts[r.first] : old_text.size();
    std::size_t region_end = r.last_excl < starts.size() ? starts[r.last_excl] : old_text.size();
    std::vector<config::byte_edit> in_region;
    for (const auto* e : r.edits)
      in_region.push_back({e->offset - region_start, e->length, e->replacement});
    const std::string replaced =
        config::apply_edits(old_text.substr(region_start, region_end - region_start),
                            std::move(in_region), config::replaced_newlines::dropped);
    auto new_lines = lines_of(replaced);
    const std::size_t old_count = ctx_last - ctx_first;
    const std::size_t new_count = old_count - (r.last_excl - r.first) + new_lines.size();
    auto range = [](std::size_t first, std::size_t count) {
      return std::to_string(count == 0 ? first : first + 1) + "," + std::to_string(count);
    };
    out += "@@ -" + range(ctx_first, old_count) + " +" + range(ctx_first, new_count) + " @@\n";
    for (std::size_t i = ctx_first; i < r.first; ++i) emit_line(out, ' ', old_lines[i]);
    for (std::size_t i = r.first; i < r.last_excl; ++i) emit_line(out, '-', old_lines[i]);
    for (auto l : new_lines) emit_line(out, '+', l);
    for (std::size_t i = r.last_excl; i < ctx_last; ++i) emit_line(out, ' ', old_lines[i]);
  }
  return out;
}

}  // namespace

namespace {

// The blocks (offsets of their directives, outermost first) around the directive that starts at
// each offset of `wanted`, in a per-file tree.
void enclosing_blocks(config::list<config::directive> level, std::vector<std::size_t>& stack,
                      const std::set<std::size_t>& wanted,
                      std::map<std::size_t, std::vector<std::size_t>>& out) {
  for (const auto& d : level) {
    if (wanted.count(d.offset)) out[d.offset] = stack;
    if (d.has_block) {
      stack.push_back(d.offset);
      enclosing_blocks(d.block, stack, wanted, out);
      stack.pop_back();
    }
  }
}

// Every directive starting in [from, to), with the blocks around it.
void directives_in(config::list<config::directive> level, std::vector<std::size_t>& stack,
                   std::size_t from, std::size_t to,
                   std::vector<std::pair<std::size_t, std::vector<std::size_t>>>& out) {
  for (const auto& d : level) {
    if (d.offset >= from && d.offset < to) out.emplace_back(d.offset, stack);
    if (d.has_block) {
      stack.push_back(d.offset);
      directives_in(d.block, stack, from, to, out);
      stack.pop_back();
    }
  }
}

// `old_text` with the fix's `edits` (non-overlapping) applied: lines the edits replace go.
std::string apply_edits(std::string_view old_text, const std::vector<text_edit>& edits) {
  std::vector<config::byte_edit> bytes;
  bytes.reserve(edits.size());
  for (const auto& e : edits) bytes.push_back({e.offset, e.length, e.replacement});
  return config::apply_edits(old_text, std::move(bytes), config::replaced_newlines::dropped);
}

}  // namespace

std::string misplaced_edit(std::string_view old_text, const std::vector<text_edit>& edits,
                           const std::string& path) {
  const std::string updated = apply_edits(old_text, edits);
  std::optional<config::parsed_buffer> old_tree, new_tree;
  try {
    old_tree = config::parse_buffer(old_text, path, 0);
  } catch (const input_error&) {
    return {};  // not a file this check can judge; the loader parsed it, so this does not happen
  }
  try {
    new_tree = config::parse_buffer(updated, path, 0);
  } catch (const input_error& e) {
    return std::string("the fixed file would not parse: ") + e.what();
  }
  std::set<std::size_t> anchors;
  for (const auto& e : edits)
    if (e.anchor != static_cast<std::size_t>(-1)) anchors.insert(e.anchor);
  std::map<std::size_t, std::vector<std::size_t>> intended;
  std::vector<std::size_t> stack;
  enclosing_blocks(old_tree->directives, stack, anchors, intended);
  // Where an old offset is after the edits: shifted by every edit that ends at or before it.
  auto moved = [&](std::size_t old_offset) {
    std::ptrdiff_t shift = 0;
    for (const auto& e : edits)
      if (e.offset + e.length <= old_offset)
        shift += static_cast<std::ptrdiff_t>(e.replacement.size()) -
                 static_cast<std::ptrdiff_t>(e.length);
    return static_cast<std::size_t>(static_cast<std::ptrdiff_t>(old_offset) + shift);
  };
  std::ptrdiff_t shift = 0;
  for (const auto& e : edits) {
    const std::size_t new_start =
        static_cast<std::size_t>(static_cast<std::ptrdiff_t>(e.offset) + shift);
    shift +=
        static_cast<std::ptrdiff_t>(e.replacement.size()) - static_cast<std::ptrdiff_t>(e.length);
    if (e.anchor == static_cast<std::size_t>(-1)) continue;
    auto want = intended.find(e.anchor);
    if (want == intended.end()) return "the fix's anchor directive is not in the file";
    std::vector<std::size_t> expected;
    for (auto b : want->second) expected.push_back(moved(b));
    std::vector<std::pair<std::size_t, std::vector<std::size_t>>> landed;
    directives_in(new_tree->directives, stack, new_start, new_start + e.replacement.size(), landed);
    for (const auto& [offset, blocks] : landed)
      if (blocks != expected) {
        const auto lc = config::locate(updated, offset);
        return "a directive the fix writes (line " + std::to_string(lc.line) +
               ") would land outside the block it belongs in";
      }
  }
  return {};
}

fix_result apply_fixes(const config::config& cfg, const std::vector<finding>& findings) {
  fix_result result;
  std::map<std::string, std::vector<text_edit>> per_file;
  std::set<std::tuple<std::string, std::size_t, std::size_t, std::string>> seen;
  for (std::size_t fi = 0; fi < findings.size(); ++fi) {
    const auto& f = findings[fi];
    if (f.edits.empty()) continue;
    // All of a finding's edits apply, or none.
    bool conflict = false, all_seen = true;
    for (const auto& e : f.edits) {
      if (seen.count({e.file, e.offset, e.length, e.replacement})) continue;
      all_seen = false;
      for (const auto& o : per_file[e.file]) {
        bool overlap = e.offset < o.offset + o.length && o.offset < e.offset + e.length;
        bool same_insert_point = e.length == 0 && o.length == 0 && e.offset == o.offset;
        if (overlap || same_insert_point) conflict = true;
      }
    }
    if (conflict) {
      result.conflicts.push_back(f.rule + " at " + to_string(f.location));
      result.unfixed.insert(fi);
      continue;
    }
    if (!all_seen)
      for (const auto& e : f.edits)
        if (seen.insert({e.file, e.offset, e.length, e.replacement}).second)
          per_file[e.file].push_back(e);
    ++result.applied;
  }
  // The order config::apply_edits applies them in: an insertion before a replacement at the same
  // offset (the diff and the re-parse check follow the same order).
  const auto by_offset = [](const text_edit& a, const text_edit& b) {
    return std::tie(a.offset, a.length) < std::tie(b.offset, b.length);
  };
  for (auto& [path, edits] : per_file) {
    // A named copy for the lambda: clang 14 cannot capture a structured binding.
    const std::string& edited = path;
    auto file = std::find_if(cfg.files.begin(), cfg.files.end(),
                             [&](const auto& s) { return s.path == edited; });
    if (file == cfg.files.end() || edits.empty()) continue;
    std::stable_sort(edits.begin(), edits.end(), by_offset);
    // Every fix is re-parsed before it is shown or written: a fix that would not parse, or
    // whose directive would land in another block (the main context of a one-line
    // `http { server { ... } }`), is dropped and named, never written.
    if (!misplaced_edit(file->content, edits, path).empty()) {
      std::vector<text_edit> kept;
      for (std::size_t fi = 0; fi < findings.size(); ++fi) {
        const auto& f = findings[fi];
        if (result.unfixed.count(fi)) continue;
        std::vector<text_edit> mine;
        for (const auto& e : f.edits)
          if (e.file == path &&
              std::find_if(edits.begin(), edits.end(),
                           [&](const text_edit& x) {
                             return x.offset == e.offset && x.length == e.length &&
                                    x.replacement == e.replacement;
                           }) != edits.end() &&
              std::find_if(kept.begin(), kept.end(), [&](const text_edit& x) {
                return x.offset == e.offset && x.length == e.length &&
                       x.replacement == e.replacement;
              }) == kept.end())
            mine.push_back(e);
        if (mine.empty()) continue;
        std::vector<text_edit> trial = kept;
        trial.insert(trial.end(), mine.begin(), mine.end());
        std::stable_sort(trial.begin(), trial.end(), by_offset);
        const std::string why = misplaced_edit(file->content, trial, path);
        if (why.empty()) {
          kept = std::move(trial);
        } else {
          result.refused.push_back(f.rule + " at " + to_string(f.location) + ": " + why);
          result.unfixed.insert(fi);
          --result.applied;
        }
      }
      edits = std::move(kept);
      if (edits.empty()) continue;
    }
    std::string updated = apply_edits(file->content, edits);
    result.diff += file_diff(display_path(path), file->content, edits);
    result.files.emplace(path, std::move(updated));
  }
  return result;
}

}  // namespace ngxtls::engine
