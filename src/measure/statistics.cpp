// SPDX-License-Identifier: Apache-2.0
// Statistics over samples (see statistics.hpp).
#include "measure/statistics.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/statistics.hpp"

namespace sb::measure {

Statistics statistics_of(std::span<const double> samples) {
  Statistics s;
  if (samples.empty()) return s;
  const auto [low, high] = std::minmax_element(samples.begin(), samples.end());
  s.count = samples.size();
  s.min = *low;
  s.max = *high;
  s.median = sb::median(std::vector<double>(samples.begin(), samples.end()));
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return s;
}

}  // namespace sb::measure
