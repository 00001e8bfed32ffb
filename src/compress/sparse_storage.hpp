// SPDX-License-Identifier: Apache-2.0
// A pruned model's weights as stored: each weight matrix in whichever of four layouts holds it
// in the fewest bytes, every other tensor (biases, BatchNorm γ β, embeddings) dense fp32, each
// decoding to exactly the dense values. What weight_bytes counts after a pruned run. Leaves out
// computing with them (sparse_matrix.hpp builds the CSR a kernel reads) and files (the byte
// counts are of the arrays below, the form a checkpoint writer would lay down).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compress/magnitude_pruning.hpp"

namespace sb::compress {

// Bytes per element at a fraction s of zeros, s the sparsity (index widths as stored):
//   dense        4                                    any matrix
//   two_of_four  2.125: two fp32 values and two 2-bit  cols % 4 == 0 and at most two nonzeros in
//                positions per group of four           every group of four along a row (the
//                                                      layout sparse tensor cores read)
//   csr          (1 − s)·(4 + 2) + 4·(rows + 1)/numel  16-bit column indices when cols <= 65536,
//                                                      32-bit otherwise; int32 row starts
//   bitmap       (1 − s)·4 + 1/8                       one bit per element, the nonzeros in order
// so csr wins beyond about 98% sparsity, bitmap from about 3% up to there, two_of_four ties
// bitmap at exactly 50% (and is preferred: it is the layout hardware runs).
enum class SparseLayout { dense, two_of_four, csr, bitmap };
const char* to_string(SparseLayout layout);

// One tensor (rows, cols), row-major, in one layout. The arrays that a layout does not use are
// empty; bytes() is what the layout stores.
struct StoredTensor {
  std::string name;
  SparseLayout layout = SparseLayout::dense;
  std::int64_t rows = 0, cols = 0;
  std::vector<float> values;              // dense: (rows·cols); else the kept values in row order
  std::vector<std::int32_t> row_start;    // csr: (rows + 1)
  std::vector<std::uint16_t> col16;       // csr, cols <= 65536: (nnz)
  std::vector<std::uint32_t> col32;       // csr, wider: (nnz)
  std::vector<std::uint8_t> index_bits;   // bitmap: (⌈numel/8⌉) bit i of byte i/8 = element i kept;
                                          // two_of_four: (⌈groups/2⌉) per group 2×2 bits, low nibble first
  std::int64_t numel() const { return rows * cols; }
  std::int64_t bytes() const;
  // (rows, cols) -> the dense values, exactly the ones encoded.
  std::vector<float> to_dense() const;
};

// dense (rows, cols) in `layout`; two_of_four only where it fits (two_of_four_fits).
StoredTensor encode(const std::string& name, const float* dense, std::int64_t rows, std::int64_t cols,
                    SparseLayout layout);
bool two_of_four_fits(const float* dense, std::int64_t rows, std::int64_t cols);
// The smallest of the layouts that fit; ties go to the earlier of dense, two_of_four, csr, bitmap.
StoredTensor encode_smallest(const std::string& name, const float* dense, std::int64_t rows, std::int64_t cols);

// A whole model: every parameter tensor, the weight matrices (pointing into the tensors) each
// in its smallest layout, the rest dense.
struct StoredWeights {
  std::vector<StoredTensor> tensors;
  std::int64_t bytes() const;        // as stored
  std::int64_t dense_bytes() const;  // 4 · every element
  // "dense:12 two_of_four:0 csr:0 bitmap:17": how many tensors each layout holds.
  std::string layout_counts() const;
  const StoredTensor& at(const std::string& name) const;
};

// A parameter tensor (name, values, numel), as the optimizer's slices list them.
struct NamedTensor {
  std::string name;
  const float* values = nullptr;  // (numel)
  std::int64_t numel = 0;
};
// tensors: every parameter; matrices: those of them stored as (rows, cols) matrices (matched by
// their values pointer; a matrix that is no tensor is an internal error).
StoredWeights store_weights(std::span<const NamedTensor> tensors, std::span<const WeightMatrix> matrices);

}  // namespace sb::compress
