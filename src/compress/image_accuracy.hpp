// SPDX-License-Identifier: Apache-2.0
// Top-1 accuracy of an inference function over a labelled image set, in batches: what the
// compressed-model reports (int8, sparse) measure their models and the dense one by. Leaves out
// timing (the callers time whole passes).
#pragma once

#include <algorithm>
#include <cstdint>

namespace sb::compress {

// Labelled images (count, image_size) in host memory.
struct ImageSet {
  const float* images = nullptr;
  const std::int32_t* labels = nullptr;
  std::int64_t count = 0, image_size = 0;
};

// logits_of(images (N, image_size), N) -> (N, classes), N <= batch; ties go to the lower class.
template <class Logits>
double top1_accuracy(const ImageSet& set, std::int64_t batch, std::int64_t classes, Logits logits_of) {
  std::int64_t correct = 0;
  for (std::int64_t first = 0; first < set.count; first += batch) {
    const std::int64_t N = std::min(batch, set.count - first);
    const float* logits = logits_of(set.images + first * set.image_size, N);
    for (std::int64_t n = 0; n < N; ++n) {
      const float* row = logits + n * classes;
      correct += std::max_element(row, row + classes) - row == set.labels[first + n];
    }
  }
  return static_cast<double>(correct) / static_cast<double>(set.count);
}

}  // namespace sb::compress
