// SPDX-License-Identifier: Apache-2.0
// The spread of a case over its repeats (`repeats: N` in a suite): from each repeat's median
// step time, their median, mean and a 95% confidence interval of the mean (Student's t), the
// relative range, and a noise flag when that range exceeds a stated bound. Leaves out running
// the repeats (cli/command_run.cpp) and the spread within one run (the summary's MAD).
#pragma once

#include <cstdint>
#include <vector>

namespace sb::measure {

// A measurement is flagged noisy when its repeats' range exceeds this share of their median.
inline constexpr double kRepeatNoiseBoundPct = 5.0;

struct RepeatSpread {
  std::int64_t repeats = 0;
  double median_s = 0, mean_s = 0;
  double ci95_low_s = 0, ci95_high_s = 0;  // mean ± t(0.975, n−1)·s/√n; the mean itself for n = 1
  double range_pct = 0;                    // (max − min) / median, in percent
  bool noisy = false;                      // range_pct > bound_pct
  double bound_pct = kRepeatNoiseBoundPct;
};

// Of the repeats' per-run values (median step times, seconds); at least one.
RepeatSpread repeat_spread(const std::vector<double>& per_repeat_s, double bound_pct = kRepeatNoiseBoundPct);

// Student's t quantile at 0.975 with `df` degrees of freedom (df >= 1).
double student_t_975(std::int64_t df);

}  // namespace sb::measure
