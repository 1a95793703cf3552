#pragma once
// "Did you mean": the known word nearest to a mistyped one.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ngxtls {

/// The candidate nearest to `word` by edit distance (insertions, deletions, substitutions
/// and swaps of two neighbours each cost 1), when it is close enough to be a typo: at most
/// 1 edit for words up to 4 bytes, 2 up to 8, else a third of the word's length. Ties go to
/// the earlier candidate. nullopt when none is that close or `word` is a candidate.
std::optional<std::string> nearest_word(std::string_view word,
                                        const std::vector<std::string>& candidates);

/// " (did you mean \"X\"?)" for nearest_word(word, candidates), else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

/// The `id` of every item of `catalog` (a rule catalog), in its order: the candidates for a
/// mistyped rule id.
template <typename Catalog>
std::vector<std::string> ids_of(const Catalog& catalog) {
  std::vector<std::string> out;
  out.reserve(catalog.size());
  for (const auto& item : catalog) out.push_back(item.id);
  return out;
}

}  // namespace ngxtls
