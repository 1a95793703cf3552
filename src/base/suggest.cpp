#include "base/suggest.hpp"

#include <algorithm>

namespace ngxtls {

namespace {

// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of one span).
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> nearest_word(std::string_view word,
                                        const std::vector<std::string>& candidates) {
  // Long inputs are no typo of a short word; this also bounds the table above.
  if (word.empty() || word.size() > 256) return std::nullopt;
  const std::size_t limit = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : word.size() / 3;
  std::optional<std::string> best;
  std::size_t best_d = limit + 1;
  for (const auto& c : candidates) {
    if (c == word) return std::nullopt;
    if (c.size() > word.size() + limit || word.size() > c.size() + limit) continue;
    const std::size_t d = distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const auto n = nearest_word(word, candidates);
  return n ? " (did you mean \"" + *n + "\"?)" : std::string();
}

}  // namespace ngxtls
