// SPDX-License-Identifier: Apache-2.0
// Confidence interval and noise flag over a case's repeats.
#include "measure/repeat_spread.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "core/check.hpp"
#include "core/statistics.hpp"

namespace sb::measure {

double student_t_975(std::int64_t df) {
  SB_CHECK(df >= 1, "Student's t needs at least one degree of freedom, got {}", df);
  // t(0.975, df) for df = 1..30 (any statistics table, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2);
  // beyond 30 the normal approximation with Cornish-Fisher's first correction.
  static constexpr std::array<double, 30> table = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
      2.120,  2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df <= 30) return table[static_cast<std::size_t>(df - 1)];
  const double z = 1.959964, d = static_cast<double>(df);
  return z + (z * z * z + z) / (4.0 * d);
}

RepeatSpread repeat_spread(const std::vector<double>& per_repeat_s, double bound_pct) {
  SB_CHECK(!per_repeat_s.empty(), "a repeat spread needs at least one run");
  RepeatSpread r;
  r.repeats = static_cast<std::int64_t>(per_repeat_s.size());
  r.bound_pct = bound_pct;
  r.median_s = median(per_repeat_s);
  const double n = static_cast<double>(per_repeat_s.size());
  r.mean_s = std::accumulate(per_repeat_s.begin(), per_repeat_s.end(), 0.0) / n;
  r.ci95_low_s = r.ci95_high_s = r.mean_s;
  if (per_repeat_s.size() > 1) {
    double squares = 0;
    for (double x : per_repeat_s) squares += (x - r.mean_s) * (x - r.mean_s);
    const double half = student_t_975(r.repeats - 1) * std::sqrt(squares / (n - 1.0)) / std::sqrt(n);
    r.ci95_low_s = r.mean_s - half;
    r.ci95_high_s = r.mean_s + half;
  }
  const auto [low, high] = std::minmax_element(per_repeat_s.begin(), per_repeat_s.end());
  r.range_pct = r.median_s > 0 ? (*high - *low) / r.median_s * 100.0 : 0.0;
  r.noisy = r.range_pct > bound_pct;
  return r;
}

}  // namespace sb::measure
