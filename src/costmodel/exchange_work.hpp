// SPDX-License-Identifier: Apache-2.0
// What the trainer's gradient exchange (train/data_parallel.cpp, train/storage_main_gradients.cpp)
// does besides its collectives, as bytes of memory traffic (read + written) per rank and the
// phase of the step they fall in: packing the gradients into buckets or staging them for a
// reduction, copying the sums back, scaling them by 1/dp, adding a rank's reduced pieces into
// its shard, and ZeRO-1 and 2's gather of the updated parameters after the optimizer (its own
// all-gather and the copies around it). Every one is a streaming pass the kernel table does not
// time; step_prediction.cpp prices them at the rank's memory speed. Leaves out the collectives'
// own times (the link fit) and ZeRO-3's unit gathers (their own term).
#pragma once

#include <cstdint>

#include "plan/config.hpp"

namespace sb::costmodel {

// Bytes per rank of one pipeline chunk's exchange; P: the chunk's parameters, s = ⌈P/dp⌉.
struct ExchangeWork {
  // on the compute stream inside each micro-batch's backward (staging, 16-bit accumulation)
  double backward_bytes_per_micro_batch = 0;
  // ... once per step in the backward phase (packing for a bucketed all-reduce, zeroing a shard,
  // the reduced pieces of all micro-batches but the last added into it)
  double backward_bytes_per_step = 0;
  double finish_bytes = 0;         // after the last reduction, before the optimizer
  double after_optimizer_bytes = 0;  // ZeRO-1 and 2: the copies around the parameters' gather
  // ZeRO-1: one reduce-scatter of the whole (padded) gradient after backward instead of buckets
  // overlapping it; its buffer's bytes (0: the buckets overlap backward)
  double reduce_scatter_bytes = 0;
  double after_optimizer_gather_bytes = 0;  // ZeRO-1 and 2: the all-gather's buffer (0: none)
};

// The work above for `parameters` of one chunk under `config` over `dp` ranks and `micro_batches`
// per step (nothing at dp 1 but 16-bit main gradients' accumulation, which a rank does alone too).
ExchangeWork exchange_work(const plan::TrainConfig& config, double parameters, int dp, std::int64_t micro_batches);

}  // namespace sb::costmodel
