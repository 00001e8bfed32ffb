// SPDX-License-Identifier: Apache-2.0
// How a task hands its gradients to data parallelism: each gradient range as soon as backward
// has finished it, then the end of backward. Leaves out how they travel (data_parallel.hpp).
#pragma once

#include <cstdint>
#include <span>

#include "parallel/communicator.hpp"

namespace sb::train {

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  // The range [offset, offset+count) of the model's flat gradients (floats) is final for this
  // step (for this micro-batch, under reduces_every_micro_batch()): its backward has written it.
  virtual void ready(std::int64_t offset, std::int64_t count) = 0;
  // ZeRO-2: every micro-batch's gradients are reduced as its backward finishes them and left
  // zero once reduced. Then ready() is called over every micro-batch's backward (not only the
  // last), micro_batch_done() after each but the last, and the task never zeroes the gradients.
  virtual bool reduces_every_micro_batch() const { return false; }
  virtual void micro_batch_done() {}
  // Backward is over. On return the gradients this rank's optimizer reads hold the mean over
  // the global batch: every rank's local gradients (a sum of micro-batch means) × local_scale,
  // averaged over the data-parallel ranks.
  virtual void finish(double local_scale) = 0;
  // After finish(): the gradients [offset, offset + count) as the optimizer reads them where
  // those are not the model's fp32 gradients, i.e. 16-bit main gradients (precision.main_grads
  // storage): their bits and type (bf16 or f16). Empty bits where the fp32 gradients are read.
  struct SixteenBitGradients {
    std::span<std::uint16_t> bits;
    parallel::DataType type = parallel::DataType::bf16;
  };
  virtual SixteenBitGradients sixteen_bit_gradients(std::int64_t /*offset*/, std::int64_t /*count*/) { return {}; }
};

}  // namespace sb::train
