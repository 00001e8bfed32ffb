// SPDX-License-Identifier: Apache-2.0
// A case's spread over its repeats: the interval, the range and the noise flag.
#include <gtest/gtest.h>

#include <cmath>

#include "measure/repeat_spread.hpp"

namespace sb::measure {
namespace {

TEST(RepeatSpread, ThreeRepeatsGiveStudentsIntervalOfTheMean) {
  const RepeatSpread r = repeat_spread({0.100, 0.102, 0.104});
  EXPECT_EQ(r.repeats, 3);
  EXPECT_DOUBLE_EQ(r.median_s, 0.102);
  EXPECT_NEAR(r.mean_s, 0.102, 1e-15);
  const double half = 4.303 * 0.002 / std::sqrt(3.0);  // s = 0.002
  EXPECT_NEAR(r.ci95_low_s, 0.102 - half, 1e-12);
  EXPECT_NEAR(r.ci95_high_s, 0.102 + half, 1e-12);
  EXPECT_NEAR(r.range_pct, 0.004 / 0.102 * 100, 1e-9);
  EXPECT_FALSE(r.noisy);  // 3.9% < 5%
}

TEST(RepeatSpread, ARangeBeyondTheBoundIsNoisy) {
  EXPECT_TRUE(repeat_spread({0.100, 0.100, 0.110}).noisy);
  EXPECT_FALSE(repeat_spread({0.100, 0.100, 0.110}, 20.0).noisy);
}

TEST(RepeatSpread, OneRepeatHasNoInterval) {
  const RepeatSpread r = repeat_spread({0.5});
  EXPECT_EQ(r.ci95_low_s, 0.5);
  EXPECT_EQ(r.ci95_high_s, 0.5);
  EXPECT_EQ(r.range_pct, 0.0);
}

TEST(StudentT, TableAndLargeSampleApproximation) {
  EXPECT_DOUBLE_EQ(student_t_975(1), 12.706);
  EXPECT_DOUBLE_EQ(student_t_975(30), 2.042);
  EXPECT_NEAR(student_t_975(60), 2.000, 0.002);   // tables: 2.000
  EXPECT_NEAR(student_t_975(120), 1.980, 0.002);  // tables: 1.980
}

}  // namespace
}  // namespace sb::measure
