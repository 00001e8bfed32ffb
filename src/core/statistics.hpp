// SPDX-License-Identifier: Apache-2.0
// Summary statistics of timing samples, one definition for the trainer, the result reader and
// calibrate.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
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

// The q-quantile (0 <= q <= 1) with linear interpolation between the order statistics
// (numpy's default, Hyndman and Fan's type 7); NaN for no values.
inline double quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(at));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (at - static_cast<double>(below)) * (values[above] - values[below]);
}

// The median absolute deviation from the median (unscaled: 1.4826 of it estimates a normal σ).
inline double median_absolute_deviation(std::vector<double> values) {
  const double centre = median(values);
  for (double& v : values) v = std::abs(v - centre);
  return median(std::move(values));
}

// The standard error of the difference of two medians, each over n samples with the given
// MAD (a normal σ is 1.4826 MAD; a median's standard error sqrt(π/2)·σ/√n).
inline double median_difference_standard_error(double mad_a, double n_a, double mad_b, double n_b) {
  constexpr double kMadToSigma = 1.4826, kMedianEfficiency = 1.2533;
  return kMedianEfficiency * kMadToSigma * std::sqrt(mad_a * mad_a / n_a + mad_b * mad_b / n_b);
}

}  // namespace sb
