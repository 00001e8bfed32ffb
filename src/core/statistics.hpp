// Summary statistics of timing samples, one definition for the trainer, the result reader and
// calibrate.
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

namespace sb {

// The median: the middle value, or the mean of the two middle ones for an even count; NaN for
// no values.
inline double median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace sb
