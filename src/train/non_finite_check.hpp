// SPDX-License-Identifier: Apache-2.0
// Stops fp32 training at the first step whose loss or gradient norm is NaN or infinite, naming
// the step and the first layer where non-finite values appeared. The per-step check costs
// nothing (the loss, and the gradient norm that clipping computes anyway); only after it fails
// does every rank scan its tensors in forward order: the activations of its last forward, else
// its parameter gradients. Leaves out fp16 loss scaling's overflowed gradients, which skip the
// step instead (optim/loss_scaler.hpp); a non-finite loss stops fp16 training too.
#pragma once

#include <cstdint>

#include "parallel/communicator.hpp"
#include "plan/config.hpp"
#include "train/training_task.hpp"

namespace sb::train {

// Collective over `world` when the step is non-finite (every rank sees the same loss and
// gradient norm, so all of them enter it or none). Throws UserError, the same sentence on
// every rank: "<config>: step 17: non-finite values (nan) first appeared in the gradient of
// blocks.3.fcw (layer 3) on rank 0; the loss is nan and the gradient norm nan (training
// diverged: lower optimizer.lr?)". `step` is 1-based; `pp_rank` orders the ranks' stages;
// `loss_scaling`: an infinite gradient norm is fp16's skipped step, not an error.
void stop_if_non_finite(const plan::TrainConfig& config, std::int64_t step, double loss, double grad_norm,
                        bool loss_scaling, TrainingTask& task, parallel::Communicator& world, int pp_rank);

}  // namespace sb::train
