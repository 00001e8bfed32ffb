// SPDX-License-Identifier: Apache-2.0
// Magnitude pruning of a model's GEMM weight matrices: global unstructured (the smallest |w|
// over every matrix together, at a chosen sparsity) and 2:4 structured (in every group of four
// consecutive weights along a row, the reduction dimension of the GEMM, the two largest kept:
// the pattern sparse tensor cores run). Leaves out keeping the masks through training
// (train/parameter_constraints.hpp) and which tensors a model calls weight matrices (the task).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sb::compress {

// One weight matrix in row-major storage: (rows, cols), cols the GEMM's reduction dimension
// (a linear layer's inputs; a convolution's IC·KH·KW).
struct WeightMatrix {
  std::string name;
  const float* values = nullptr;  // (rows, cols)
  std::int64_t rows = 0, cols = 0;
  std::int64_t numel() const { return rows * cols; }
};

enum class PruningPattern { unstructured, two_of_four };
PruningPattern pruning_pattern_from_string(const std::string& name);  // "unstructured" | "2:4"

// keep[m][i] = 1 where element i of matrix m survives. Unstructured: exactly
// floor(sparsity · total) elements pruned, the smallest |w| over all matrices, ties broken
// towards the earlier element. 2:4: `sparsity` is ignored; matrices whose cols are not a
// multiple of 4 stay dense (their count shows in the sparsity reached).
std::vector<std::vector<std::uint8_t>> magnitude_masks(std::span<const WeightMatrix> matrices,
                                                       PruningPattern pattern, double sparsity);

// The fraction of exact zeros over every element of the matrices (the sparsity reached).
struct Sparsity {
  std::int64_t zeros = 0, elements = 0;
  double fraction() const { return elements > 0 ? static_cast<double>(zeros) / static_cast<double>(elements) : 0; }
};
Sparsity sparsity_of(std::span<const WeightMatrix> matrices);

}  // namespace sb::compress
