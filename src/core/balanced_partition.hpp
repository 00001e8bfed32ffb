// SPDX-License-Identifier: Apache-2.0
// Splitting a sequence of costed layers into contiguous parts (pipeline stages) so that the
// most expensive part costs as little as possible. Leaves out where the costs come from
// (a model's FLOP formulas or measured times) and any memory constraint.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sb {

// Part sizes (layer counts, each >= 1, summing to costs.size()) of the contiguous split of
// `costs` into `parts` parts that minimises the largest part's cost sum. Among the optimal
// splits it returns the one whose earlier parts are as long as possible. Requires
// 1 <= parts <= costs.size() and costs >= 0 (SB_CHECK: callers validate user input first).
std::vector<std::int64_t> balanced_contiguous_partition(std::span<const double> costs, int parts);

// The largest part's cost sum of a split given as part sizes.
double largest_part_cost(std::span<const double> costs, std::span<const std::int64_t> part_sizes);

}  // namespace sb
