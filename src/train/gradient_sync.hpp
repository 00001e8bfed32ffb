// SPDX-License-Identifier: Apache-2.0
// How a task hands its gradients to data parallelism: each gradient range as soon as backward
// has finished it, then the end of backward. Leaves out how they travel (data_parallel.hpp).
#pragma once

#include <cstdint>

namespace sb::train {

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  // The range [offset, offset+count) of the model's flat gradients (floats) is final for this
  // step: its last micro-batch's backward has written it.
  virtual void ready(std::int64_t offset, std::int64_t count) = 0;
  // Backward is over. On return the gradients this rank's optimizer reads hold the mean over
  // the global batch: every rank's local gradients (a sum of micro-batch means) × local_scale,
  // averaged over the data-parallel ranks.
  virtual void finish(double local_scale) = 0;
};

}  // namespace sb::train
