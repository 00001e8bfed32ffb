// SPDX-License-Identifier: Apache-2.0
// SGD with momentum and weight decay, PyTorch semantics (torch.optim.SGD, dampening 0, no
// Nesterov), with optional global-norm clipping. Leaves out the schedule and sharded state.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/memory.hpp"
#include "kernels/kernels.hpp"
#include "optim/gradient_clipping.hpp"
#include "optim/parameter_slice.hpp"

namespace sb::optim {

struct SgdConfig {
  double lr = 0.1;
  double momentum = 0.9;
  double weight_decay = 5e-4;  // L2, added to the gradient; slices with weight_decay == true
  double grad_clip = 0.0;      // maximum global L2 norm of the gradients; 0 = off
};

class Sgd {
 public:
  // The momentum buffers live in one TrackedBuffer of category optimizer: exactly 4 bytes
  // per parameter.
  Sgd(std::vector<ParameterSlice> slices, const SgdConfig& config, kernels::Backend backend,
      MemoryTracker& tracker);

  // Clips the gradients to config.grad_clip by their global L2 norm when grad_clip > 0
  // (as clip_grad_norm_), then takes one SGD step with this lr:
  //   g = grad + wd·p;  buf = g (first step) or momentum·buf + g;  p -= lr·buf.
  // Returns the norm before clipping.
  // Under fp16 loss scaling the gradients are divided by scaling.loss_scale first, and an
  // overflow (non-finite norm, returned) skips the step: parameters, state and step count stay.
  double clip_and_step(double lr, const GradientScaling& scaling = {});

  // For a sharded optimizer (ZeRO-1): how this rank's squared gradient norm becomes the
  // whole model's, so clipping sees the global norm.
  void set_norm_reducer(SquaredNormReducer reduce) { reduce_norm_ = std::move(reduce); }

  std::int64_t step_count() const { return step_; }
  // Restores the step count a checkpoint saved (the first step initialises the momentum).
  void set_step_count(std::int64_t step) { step_ = step; }
  const SgdConfig& config() const { return config_; }
  const std::vector<ParameterSlice>& slices() const { return slices_; }
  // Momentum buffers in slice order (for checkpoints).
  std::span<float> momentum_buffers() {
    return {state_.as<float>(), static_cast<std::size_t>(numel_)};
  }

 private:
  std::vector<ParameterSlice> slices_;
  SgdConfig config_;
  const kernels::KernelTable* kernels_;
  std::int64_t numel_ = 0;
  TrackedBuffer state_;  // momentum buffers (numel_)
  TrackedBuffer widening_scratch_;  // 16-bit main gradients widened a chunk at a time
  std::int64_t step_ = 0;
  SquaredNormReducer reduce_norm_;
};

}  // namespace sb::optim
