// SPDX-License-Identifier: Apache-2.0
#include "train/sequence_parallel_gradient_sum.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace sb::train {

SequenceParallelGradientSum::SequenceParallelGradientSum(parallel::Communicator& tp, GradientSync& inner,
                                                         std::span<float> gradients,
                                                         const std::vector<std::span<float>>& summed)
    : tp_(tp), inner_(inner), gradients_(gradients) {
  for (const std::span<float>& range : summed) {
    const std::int64_t begin = range.data() - gradients.data();
    const auto end = begin + static_cast<std::int64_t>(range.size());
    SB_CHECK(begin >= 0 && end <= static_cast<std::int64_t>(gradients.size()),
             "sequence-parallel gradient range [{}, {}) outside the {} gradients", begin, end, gradients.size());
    summed_.emplace_back(begin, end);
  }
  std::sort(summed_.begin(), summed_.end());
}

void SequenceParallelGradientSum::ready(std::int64_t offset, std::int64_t count) {
  const std::int64_t end = offset + count;
  for (const auto& [begin, stop] : summed_) {
    const std::int64_t from = std::max(begin, offset), to = std::min(stop, end);
    if (from < to) tp_.all_reduce(gradients_.subspan(static_cast<std::size_t>(from), static_cast<std::size_t>(to - from)), parallel::ReduceOp::sum);
  }
  inner_.ready(offset, count);
}

}  // namespace sb::train
