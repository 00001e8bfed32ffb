// SPDX-License-Identifier: Apache-2.0
#include "compress/magnitude_pruning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "core/check.hpp"

namespace sb::compress {

PruningPattern pruning_pattern_from_string(const std::string& name) {
  if (name == "unstructured") return PruningPattern::unstructured;
  if (name == "2:4") return PruningPattern::two_of_four;
  throw UserError(fmt::format("pruning pattern '{}' is not one of: unstructured, 2:4", name));
}

namespace {

std::vector<std::vector<std::uint8_t>> all_kept(std::span<const WeightMatrix> matrices) {
  std::vector<std::vector<std::uint8_t>> keep;
  for (const WeightMatrix& m : matrices) keep.emplace_back(static_cast<std::size_t>(m.numel()), 1);
  return keep;
}

void prune_unstructured(std::span<const WeightMatrix> matrices, double sparsity,
                        std::vector<std::vector<std::uint8_t>>& keep) {
  struct Element {
    float magnitude;
    std::uint32_t matrix;
    std::int64_t index;
  };
  std::vector<Element> elements;
  for (std::size_t m = 0; m < matrices.size(); ++m)
    for (std::int64_t i = 0; i < matrices[m].numel(); ++i)
      elements.push_back({std::fabs(matrices[m].values[i]), static_cast<std::uint32_t>(m), i});
  const auto pruned = static_cast<std::size_t>(std::floor(sparsity * static_cast<double>(elements.size())));
  if (pruned == 0) return;
  const auto smaller = [](const Element& a, const Element& b) {
    if (a.magnitude != b.magnitude) return a.magnitude < b.magnitude;
    return a.matrix != b.matrix ? a.matrix < b.matrix : a.index < b.index;
  };
  std::nth_element(elements.begin(), elements.begin() + static_cast<std::ptrdiff_t>(pruned - 1), elements.end(),
                   smaller);
  for (std::size_t e = 0; e < pruned; ++e)
    keep[elements[e].matrix][static_cast<std::size_t>(elements[e].index)] = 0;
}

void prune_two_of_four(std::span<const WeightMatrix> matrices, std::vector<std::vector<std::uint8_t>>& keep) {
  for (std::size_t m = 0; m < matrices.size(); ++m) {
    const WeightMatrix& w = matrices[m];
    if (w.cols % 4 != 0) continue;
    for (std::int64_t g = 0; g < w.numel(); g += 4) {
      std::array<int, 4> order = {0, 1, 2, 3};
      // largest |w| first, the earlier element first among equals
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return std::fabs(w.values[g + a]) > std::fabs(w.values[g + b]); });
      keep[m][static_cast<std::size_t>(g + order[2])] = 0;
      keep[m][static_cast<std::size_t>(g + order[3])] = 0;
    }
  }
}

}  // namespace

std::vector<std::vector<std::uint8_t>> magnitude_masks(std::span<const WeightMatrix> matrices,
                                                       PruningPattern pattern, double sparsity) {
  SB_CHECK(sparsity >= 0 && sparsity < 1, "sparsity {} outside [0, 1)", sparsity);
  for (const WeightMatrix& m : matrices)
    SB_CHECK(m.values != nullptr && m.rows > 0 && m.cols > 0, "weight matrix '{}' ({}, {})", m.name, m.rows, m.cols);
  std::vector<std::vector<std::uint8_t>> keep = all_kept(matrices);
  if (pattern == PruningPattern::unstructured)
    prune_unstructured(matrices, sparsity, keep);
  else
    prune_two_of_four(matrices, keep);
  return keep;
}

Sparsity sparsity_of(std::span<const WeightMatrix> matrices) {
  Sparsity s;
  for (const WeightMatrix& m : matrices) {
    s.elements += m.numel();
    s.zeros += std::count(m.values, m.values + m.numel(), 0.0f);
  }
  return s;
}

}  // namespace sb::compress
