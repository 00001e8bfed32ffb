// SPDX-License-Identifier: Apache-2.0
// The min-max contiguous partition against brute force over every split, and its tie rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/balanced_partition.hpp"
#include "core/check.hpp"
#include "core/rng.hpp"

namespace sb {
namespace {

// The smallest largest-part cost over all splits of costs into `parts` contiguous parts.
double brute_force(const std::vector<double>& costs, int parts) {
  const int n = static_cast<int>(costs.size());
  double best = 1e300;
  for (unsigned mask = 0; mask < (1u << (n - 1)); ++mask) {
    if (__builtin_popcount(mask) != parts - 1) continue;
    double part = 0, worst = 0;
    for (int i = 0; i < n; ++i) {
      part += costs[static_cast<std::size_t>(i)];
      if (i == n - 1 || (mask >> i & 1u)) worst = std::max(worst, part), part = 0;
    }
    best = std::min(best, worst);
  }
  return best;
}

TEST(BalancedPartition, OptimalOnRandomCosts) {
  const CounterRng rng(5, 0);
  std::uint64_t draw = 0;
  for (int n = 1; n <= 10; ++n) {
    for (int trial = 0; trial < 5; ++trial) {
      std::vector<double> costs;
      for (int i = 0; i < n; ++i) costs.push_back(static_cast<double>(rng.below(draw++, 20)));
      for (int parts = 1; parts <= n; ++parts) {
        const auto sizes = balanced_contiguous_partition(costs, parts);
        ASSERT_EQ(static_cast<int>(sizes.size()), parts);
        std::int64_t total = 0;
        for (auto s : sizes) {
          EXPECT_GE(s, 1);
          total += s;
        }
        EXPECT_EQ(total, n);
        EXPECT_EQ(largest_part_cost(costs, sizes), brute_force(costs, parts)) << n << " layers, " << parts << " parts";
      }
    }
  }
}

TEST(BalancedPartition, EqualCostsSplitEvenlyAndTiesKeepEarlierPartsLong) {
  const std::vector<double> equal(8, 1.0);
  EXPECT_EQ(balanced_contiguous_partition(equal, 4), (std::vector<std::int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(balanced_contiguous_partition(equal, 3), (std::vector<std::int64_t>{3, 3, 2}));
  EXPECT_EQ(balanced_contiguous_partition(std::vector<double>{0, 0, 5, 5}, 2), (std::vector<std::int64_t>{3, 1}));
  EXPECT_THROW(balanced_contiguous_partition(equal, 9), Error);
  EXPECT_THROW(balanced_contiguous_partition(equal, 0), Error);
}

}  // namespace
}  // namespace sb
