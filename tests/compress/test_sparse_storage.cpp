// SPDX-License-Identifier: Apache-2.0
// The stored layouts of pruned weights: every layout decodes to exactly the dense values it
// encoded, over shapes that are not multiples of 8 (the bitmap's bytes) or of 2 (the 2:4
// nibbles), with empty rows and columns beyond 16 bits; each layout's bytes are its formula;
// the smallest layout is chosen (dense for dense weights, 2:4 for a 2:4 mask, bitmap in
// between, CSR when almost empty); a whole model keeps its non-matrix tensors dense. Leaves out
// inference (test_sparse_resnet.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "compress/magnitude_pruning.hpp"
#include "compress/sparse_storage.hpp"
#include "core/rng.hpp"

namespace sb::compress {
namespace {

using i64 = std::int64_t;

// (rows, cols), about `density` of the entries nonzero (never exactly zero where kept).
std::vector<float> random_sparse(i64 rows, i64 cols, double density, std::uint64_t stream) {
  const CounterRng rng(11, stream);
  std::vector<float> w(static_cast<std::size_t>(rows * cols), 0.0f);
  for (i64 i = 0; i < rows * cols; ++i)
    if (rng.uniform(2 * i) < density) w[static_cast<std::size_t>(i)] = 0.5f + static_cast<float>(rng.uniform(2 * i + 1));
  return w;
}

i64 nonzeros(const std::vector<float>& w) {
  return static_cast<i64>(std::count_if(w.begin(), w.end(), [](float v) { return v != 0.0f; }));
}

// The 2:4 mask of magnitude_masks applied to w.
std::vector<float> two_of_four(std::vector<float> w, i64 rows, i64 cols) {
  const WeightMatrix m{"w", w.data(), rows, cols};
  const auto keep = magnitude_masks(std::span(&m, 1), PruningPattern::two_of_four, 0);
  for (std::size_t i = 0; i < w.size(); ++i)
    if (!keep[0][i]) w[i] = 0.0f;
  return w;
}


TEST(SparseStorage, EveryLayoutDecodesToTheDenseValuesOnAwkwardShapes) {
  struct Case {
    i64 rows, cols;
    double density;
  };
  for (const Case& c : {Case{1, 1, 1.0}, Case{3, 5, 0.4}, Case{7, 13, 0.1}, Case{5, 70000, 0.01}, Case{4, 9, 0.0}}) {
    const std::vector<float> w = random_sparse(c.rows, c.cols, c.density, static_cast<std::uint64_t>(c.cols));
    for (SparseLayout layout : {SparseLayout::dense, SparseLayout::csr, SparseLayout::bitmap}) {
      const StoredTensor t = encode("w", w.data(), c.rows, c.cols, layout);
      EXPECT_EQ(t.to_dense(), w) << to_string(layout) << " (" << c.rows << ", " << c.cols << ")";
    }
    const StoredTensor csr = encode("w", w.data(), c.rows, c.cols, SparseLayout::csr);
    if (nonzeros(w) > 0) EXPECT_EQ(csr.col16.empty(), c.cols > 65536) << "16-bit column indices exactly where they reach";
  }
  for (const auto [rows, cols] : {std::pair<i64, i64>{3, 4}, {5, 12}, {1, 4}}) {  // odd group counts too
    for (double density : {1.0, 0.3, 0.0}) {
      const std::vector<float> w = two_of_four(random_sparse(rows, cols, density, 5), rows, cols);
      ASSERT_TRUE(two_of_four_fits(w.data(), rows, cols));
      EXPECT_EQ(encode("w", w.data(), rows, cols, SparseLayout::two_of_four).to_dense(), w)
          << "(" << rows << ", " << cols << ") density " << density;
    }
  }
}

TEST(SparseStorage, BytesAreTheLayoutsFormulas) {
  const i64 rows = 7, cols = 13, n = rows * cols;
  const std::vector<float> w = random_sparse(rows, cols, 0.3, 3);
  const i64 nnz = nonzeros(w);
  ASSERT_GT(nnz, 0);
  EXPECT_EQ(encode("w", w.data(), rows, cols, SparseLayout::dense).bytes(), 4 * n);
  EXPECT_EQ(encode("w", w.data(), rows, cols, SparseLayout::csr).bytes(), 6 * nnz + 4 * (rows + 1));
  EXPECT_EQ(encode("w", w.data(), rows, cols, SparseLayout::bitmap).bytes(), 4 * nnz + (n + 7) / 8);
  const std::vector<float> half = two_of_four(random_sparse(3, 12, 1.0, 4), 3, 12);
  EXPECT_EQ(encode("w", half.data(), 3, 12, SparseLayout::two_of_four).bytes(), 9 * 8 + (9 + 1) / 2);
}

TEST(SparseStorage, TheSmallestLayoutIsChosen) {
  const i64 rows = 16, cols = 144;
  const std::vector<float> full = random_sparse(rows, cols, 1.0, 6);
  EXPECT_EQ(encode_smallest("w", full.data(), rows, cols).layout, SparseLayout::dense);
  const std::vector<float> half = two_of_four(full, rows, cols);
  EXPECT_EQ(encode_smallest("w", half.data(), rows, cols).layout, SparseLayout::two_of_four);
  const std::vector<float> tenth = random_sparse(rows, cols, 0.1, 7);
  const StoredTensor t = encode_smallest("w", tenth.data(), rows, cols);
  EXPECT_EQ(t.layout, SparseLayout::bitmap);
  EXPECT_LT(3 * t.bytes(), 4 * rows * cols) << "90% sparse: over 3× smaller than dense";
  const std::vector<float> almost_empty = random_sparse(rows, cols, 0.005, 8);
  EXPECT_EQ(encode_smallest("w", almost_empty.data(), rows, cols).layout, SparseLayout::csr);
  EXPECT_THROW(encode("w", full.data(), rows, cols, SparseLayout::two_of_four), std::exception);
}

TEST(SparseStorage, AModelStoresItsMatricesSparseAndTheRestDense) {
  const std::vector<float> weight = random_sparse(8, 16, 0.1, 9), bias = random_sparse(1, 8, 1.0, 10);
  const std::vector<NamedTensor> tensors = {{"fc.weight", weight.data(), 128}, {"fc.bias", bias.data(), 8}};
  const std::vector<WeightMatrix> matrices = {{"fc.weight", weight.data(), 8, 16}};
  const StoredWeights stored = store_weights(tensors, matrices);
  ASSERT_EQ(stored.tensors.size(), 2u);
  EXPECT_EQ(stored.at("fc.weight").layout, SparseLayout::bitmap);
  EXPECT_EQ(stored.at("fc.bias").layout, SparseLayout::dense);
  EXPECT_EQ(stored.dense_bytes(), 4 * (128 + 8));
  EXPECT_EQ(stored.bytes(), 4 * nonzeros(weight) + 16 + 4 * 8);
  EXPECT_EQ(stored.layout_counts(), "dense:1 two_of_four:0 csr:0 bitmap:1");
  EXPECT_EQ(stored.at("fc.weight").to_dense(), weight);
}

}  // namespace
}  // namespace sb::compress
