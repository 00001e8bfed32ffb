// SPDX-License-Identifier: Apache-2.0
// Exact min-max contiguous partition by dynamic programming over (layers, parts): O(n²·k),
// for the tens of layers a model has.
#include "core/balanced_partition.hpp"

#include <algorithm>
#include <limits>

#include "core/check.hpp"

namespace sb {

std::vector<std::int64_t> balanced_contiguous_partition(std::span<const double> costs, int parts) {
  const auto n = static_cast<std::int64_t>(costs.size());
  SB_CHECK(parts >= 1 && parts <= n, "cannot split {} layers into {} parts", n, parts);
  for (double c : costs) SB_CHECK(c >= 0, "negative layer cost {}", c);
  std::vector<double> prefix(static_cast<std::size_t>(n + 1), 0.0);
  for (std::int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[static_cast<std::size_t>(i)];
  const auto sum = [&](std::int64_t a, std::int64_t b) { return prefix[b] - prefix[a]; };

  // best[k][j]: the smallest largest-part cost of splitting layers [j, n) into k parts;
  // cut[k][j]: the end of the first of those parts (the latest end among equal costs).
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto K = static_cast<std::size_t>(parts);
  std::vector<std::vector<double>> best(K + 1, std::vector<double>(static_cast<std::size_t>(n + 1), kInf));
  std::vector<std::vector<std::int64_t>> cut(K + 1, std::vector<std::int64_t>(static_cast<std::size_t>(n + 1), n));
  for (std::int64_t j = 0; j < n; ++j) best[1][j] = sum(j, n);
  for (std::size_t k = 2; k <= K; ++k) {
    for (std::int64_t j = 0; j + static_cast<std::int64_t>(k) <= n; ++j) {
      // the first part is [j, e), leaving at least k − 1 layers
      for (std::int64_t e = j + 1; e + static_cast<std::int64_t>(k) - 1 <= n; ++e) {
        const double cost = std::max(sum(j, e), best[k - 1][e]);
        if (cost <= best[k][j]) best[k][j] = cost, cut[k][j] = e;
        if (sum(j, e) > best[k][j]) break;  // a longer first part only costs more (costs are not negative)
      }
    }
  }
  std::vector<std::int64_t> sizes;
  std::int64_t j = 0;
  for (std::size_t k = K; k >= 1; --k) {
    const std::int64_t e = k == 1 ? n : cut[k][j];
    sizes.push_back(e - j);
    j = e;
  }
  return sizes;
}

double largest_part_cost(std::span<const double> costs, std::span<const std::int64_t> part_sizes) {
  double largest = 0;
  std::size_t i = 0;
  for (std::int64_t size : part_sizes) {
    double part = 0;
    for (std::int64_t l = 0; l < size; ++l) part += costs[i++];
    largest = std::max(largest, part);
  }
  SB_CHECK(i == costs.size(), "part sizes cover {} of {} layers", i, costs.size());
  return largest;
}

}  // namespace sb
