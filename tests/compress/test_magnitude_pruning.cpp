// SPDX-License-Identifier: Apache-2.0
// Magnitude masks on small hand-made matrices: global unstructured prunes exactly the
// smallest |w| over all matrices together (ties towards the earlier element), 2:4 keeps the two
// largest of every group of four along a row and leaves matrices whose rows do not divide into
// groups dense; sparsity_of counts exact zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "compress/magnitude_pruning.hpp"
#include "core/check.hpp"
#include "core/rng.hpp"

namespace sb::compress {
namespace {

TEST(MagnitudePruning, GlobalUnstructuredPrunesTheSmallestAcrossMatrices) {
  const std::vector<float> a = {0.5f, -0.1f, 0.3f, -0.9f};  // (2, 2)
  const std::vector<float> b = {0.2f, -0.05f, 0.7f};        // (1, 3)
  const std::vector<WeightMatrix> matrices = {{"a", a.data(), 2, 2}, {"b", b.data(), 1, 3}};
  // 7 elements, sparsity 0.5 -> floor(3.5) = 3 pruned: 0.05, 0.1, 0.2
  const auto keep = magnitude_masks(matrices, PruningPattern::unstructured, 0.5);
  EXPECT_EQ(keep[0], (std::vector<std::uint8_t>{1, 0, 1, 1}));
  EXPECT_EQ(keep[1], (std::vector<std::uint8_t>{0, 0, 1}));
  const auto none = magnitude_masks(matrices, PruningPattern::unstructured, 0.1);  // floor(0.7) = 0
  EXPECT_EQ(none[0], (std::vector<std::uint8_t>{1, 1, 1, 1}));
}

TEST(MagnitudePruning, TiesArePrunedInStorageOrder) {
  const std::vector<float> w = {0.1f, -0.1f, 0.1f, 0.2f};
  const std::vector<WeightMatrix> matrices = {{"w", w.data(), 1, 4}};
  EXPECT_EQ(magnitude_masks(matrices, PruningPattern::unstructured, 0.5)[0],
            (std::vector<std::uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ(magnitude_masks(matrices, PruningPattern::two_of_four, 0)[0], (std::vector<std::uint8_t>{1, 0, 0, 1}));
}

TEST(MagnitudePruning, TwoOfFourKeepsTheTwoLargestOfEveryGroupAndSkipsRaggedRows) {
  std::vector<float> w(8 * 12);
  const CounterRng rng(7, 0);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(rng.normal(i));
  const std::vector<float> stem(4 * 9, 1.0f);  // rows of 9: not groups of four
  const std::vector<WeightMatrix> matrices = {{"w", w.data(), 8, 12}, {"stem", stem.data(), 4, 9}};
  const auto keep = magnitude_masks(matrices, PruningPattern::two_of_four, 0);
  for (std::size_t g = 0; g < w.size(); g += 4) {
    int kept = 0;
    float smallest_kept = 1e30f, largest_pruned = 0;
    for (std::size_t j = g; j < g + 4; ++j) {
      kept += keep[0][j];
      if (keep[0][j]) smallest_kept = std::min(smallest_kept, std::fabs(w[j]));
      else largest_pruned = std::max(largest_pruned, std::fabs(w[j]));
    }
    EXPECT_EQ(kept, 2) << "group " << g / 4;
    EXPECT_GE(smallest_kept, largest_pruned) << "group " << g / 4;
  }
  EXPECT_EQ(std::accumulate(keep[1].begin(), keep[1].end(), 0), 36);
}

TEST(MagnitudePruning, SparsityCountsExactZeros) {
  const std::vector<float> a = {0.0f, -0.0f, 1.0f, 2.0f}, b = {0.0f, 3.0f};
  const std::vector<WeightMatrix> matrices = {{"a", a.data(), 2, 2}, {"b", b.data(), 1, 2}};
  const Sparsity s = sparsity_of(matrices);
  EXPECT_EQ(s.zeros, 3);
  EXPECT_EQ(s.elements, 6);
  EXPECT_DOUBLE_EQ(s.fraction(), 0.5);
}

TEST(MagnitudePruning, UnknownPatternIsAUserError) {
  EXPECT_EQ(pruning_pattern_from_string("2:4"), PruningPattern::two_of_four);
  EXPECT_THROW(pruning_pattern_from_string("4:8"), UserError);
}

}  // namespace
}  // namespace sb::compress
