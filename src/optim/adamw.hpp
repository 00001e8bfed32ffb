// SPDX-License-Identifier: Apache-2.0
// AdamW with global-norm gradient clipping, PyTorch semantics (AdamW + clip_grad_norm_).
// Leaves out the learning-rate schedule (lr comes each step) and sharded state (ZeRO).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/memory.hpp"
#include "kernels/kernels.hpp"
#include "optim/gradient_clipping.hpp"
#include "optim/parameter_slice.hpp"

namespace sb::optim {

struct AdamWConfig {
  double lr = 3e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;  // applied to slices with weight_decay == true only
  double grad_clip = 1.0;     // maximum global L2 norm of the gradients; 0 = off
};

class AdamW {
 public:
  // m and v live in one TrackedBuffer of category optimizer: exactly 8 bytes per parameter.
  AdamW(std::vector<ParameterSlice> slices, const AdamWConfig& config, kernels::Backend backend,
        MemoryTracker& tracker);

  // Clips the gradients to config.grad_clip by their global L2 norm (scale max_norm /
  // (norm + 1e-6) when below 1, as clip_grad_norm_), then takes one AdamW step with this
  // lr. Returns the norm before clipping.
  // Under fp16 loss scaling the gradients are divided by scaling.loss_scale first, and an
  // overflow (non-finite norm, returned) skips the step: parameters, state and step count stay.
  double clip_and_step(double lr, const GradientScaling& scaling = {});

  // For a sharded optimizer (ZeRO-1): how this rank's squared gradient norm becomes the
  // whole model's, so clipping sees the global norm.
  void set_norm_reducer(SquaredNormReducer reduce) { reduce_norm_ = std::move(reduce); }

  std::int64_t step_count() const { return step_; }
  // Restores the step count a checkpoint saved (bias correction continues from it).
  void set_step_count(std::int64_t step) { step_ = step; }
  const AdamWConfig& config() const { return config_; }
  const std::vector<ParameterSlice>& slices() const { return slices_; }
  // First and second moments, in slice order (for checkpoints).
  std::span<float> first_moments() { return {state_.as<float>(), static_cast<std::size_t>(numel_)}; }
  std::span<float> second_moments() {
    return {state_.as<float>() + numel_, static_cast<std::size_t>(numel_)};
  }

 private:
  std::vector<ParameterSlice> slices_;
  AdamWConfig config_;
  const kernels::KernelTable* kernels_;
  std::int64_t numel_ = 0;
  TrackedBuffer state_;  // m (numel_) then v (numel_)
  TrackedBuffer widening_scratch_;  // 16-bit main gradients widened a chunk at a time
  std::int64_t step_ = 0;
  SquaredNormReducer reduce_norm_;
};

}  // namespace sb::optim
