// SPDX-License-Identifier: Apache-2.0
// Statistics over a measurement's samples (seconds per call, one per round): count, min, median,
// max, mean and the spread between the rounds. Leaves out taking the samples (timing.hpp).
#pragma once

#include <cstddef>
#include <limits>
#include <span>

namespace sb::measure {

struct Statistics {
  std::size_t count = 0;
  double min = std::numeric_limits<double>::quiet_NaN();
  double median = std::numeric_limits<double>::quiet_NaN();  // of an even count: the mean of the middle two
  double max = std::numeric_limits<double>::quiet_NaN();
  double mean = std::numeric_limits<double>::quiet_NaN();
  // (max − min) / median: how far apart the rounds lie; 0 for one sample, NaN for none.
  double spread() const { return count == 0 ? std::numeric_limits<double>::quiet_NaN() : (max - min) / median; }
};

// NaN figures (and count 0) for no samples.
Statistics statistics_of(std::span<const double> samples);

}  // namespace sb::measure
