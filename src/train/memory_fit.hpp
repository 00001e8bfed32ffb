// SPDX-License-Identifier: Apache-2.0
// The memory check before a run allocates: the cost model's per-rank memory by category (the
// prediction the trainer stores) against what this rank may use (core/memory_limit.hpp), so a
// batch that cannot fit is refused with the figures instead of failing in the allocator.
// Leaves out the prediction itself (src/costmodel) and measuring what the run used.
#pragma once

#include <string>

#include "core/memory_limit.hpp"
#include "plan/config.hpp"
#include "plan/run_prediction.hpp"

namespace sb::train {

// The cost model's memory predictions here are within ~5% of what the trainer tracks; a run
// is refused only when even a prediction 5% too high would not fit.
inline constexpr double kMemoryPredictionMargin = 0.05;

// The refusal's sentence when `ranks_sharing` ranks, each needing `predicted`, do not fit in
// `limit`; empty when they fit (or when nothing was predicted or the limit is unknown).
std::string memory_refusal(const plan::TrainConfig& c, const plan::PredictedMemory& predicted, int ranks_sharing,
                           const MemoryLimit& limit, const std::string& where);

// UserError with memory_refusal's sentence when this rank's share of the run does not fit on
// `device`: on cpu every rank of this node shares the host's limit; on cuda a rank has its GPU.
// prediction may be null (nothing to check); node_ranks: the ranks on this node (ThreadAllocation).
void refuse_if_memory_does_not_fit(const plan::TrainConfig& c, const plan::RunPrediction* prediction, Device device,
                                   int node_ranks);

}  // namespace sb::train
