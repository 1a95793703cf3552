#pragma once
// Summaries of durations, shared by the modules that time connections.

#include <cstddef>
#include <vector>

namespace ngxtls::probe {

/// Median and 90th percentile (nearest rank) of a set of durations, in milliseconds.
struct timing_ms {
  std::size_t count = 0;  ///< how many samples; 0 = none (median/p90 then meaningless)
  double median = 0;      ///< ms
  double p90 = 0;         ///< ms
};

/// Nearest-rank median and p90 of `samples_ms` (any order). Empty input gives count 0.
timing_ms summarize_ms(std::vector<double> samples_ms);

}  // namespace ngxtls::probe
