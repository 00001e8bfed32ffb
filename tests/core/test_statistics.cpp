// SPDX-License-Identifier: Apache-2.0
// core/statistics.hpp: the median the trainer, the result reader and calibrate share.
#include <gtest/gtest.h>

#include <cmath>

#include "core/statistics.hpp"

namespace sb {
namespace {

TEST(Median, OddCountIsTheMiddleValueEvenCountTheMeanOfTheTwo) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(median({7.0}), 7.0);
}

TEST(Median, NoValuesIsNaN) { EXPECT_TRUE(std::isnan(median({}))); }

TEST(Quantile, InterpolatesBetweenOrderStatisticsAsNumpyDoes) {
  const std::vector<double> v = {10, 1, 4, 2, 3};  // sorted 1 2 3 4 10
  EXPECT_DOUBLE_EQ(quantile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(v, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(quantile(v, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(quantile(v, 0.95), 4.0 + 0.8 * 6.0);  // numpy.quantile(v, 0.95) = 8.8
  EXPECT_DOUBLE_EQ(quantile(v, 0.05), 1.0 + 0.2 * 1.0);  // 1.2
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
}

TEST(MedianAbsoluteDeviation, IsTheMedianDistanceFromTheMedian) {
  EXPECT_DOUBLE_EQ(median_absolute_deviation({1, 2, 3, 4, 10}), 1.0);  // |.-3| = 2 1 0 1 7
  EXPECT_DOUBLE_EQ(median_absolute_deviation({5, 5, 5}), 0.0);
}

}  // namespace
}  // namespace sb
