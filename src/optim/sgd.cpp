// SPDX-License-Identifier: Apache-2.0
// SGD step with optional global-norm clipping, one kernel call per parameter slice. Leaves out
// fused multi-tensor kernels and Nesterov momentum.
#include "optim/sgd.hpp"

#include <cmath>
#include <utility>

#include "core/check.hpp"
#include "optim/gradient_clipping.hpp"
#include "optim/storage_gradients.hpp"

namespace sb::optim {

Sgd::Sgd(std::vector<ParameterSlice> slices, const SgdConfig& config, kernels::Backend backend,
         MemoryTracker& tracker)
    : slices_(std::move(slices)),
      config_(config),
      kernels_(&kernels::kernels_for(backend)),
      numel_(checked_total_numel(slices_, "sgd")),
      state_(tracker, MemoryCategory::optimizer, numel_ * static_cast<std::int64_t>(sizeof(float)),
             "sgd momentum", kernels::memory_device(backend)),
      widening_scratch_(widening_scratch(slices_, tracker, kernels::memory_device(backend))) {
  SB_USER_CHECK(config_.lr >= 0, "sgd: lr must be non-negative, got {}", config_.lr);
  SB_USER_CHECK(config_.momentum >= 0 && config_.momentum < 1,
                "sgd: momentum must be in [0, 1), got {}", config_.momentum);
  SB_USER_CHECK(config_.weight_decay >= 0, "sgd: weight_decay must be non-negative, got {}",
                config_.weight_decay);
  SB_USER_CHECK(config_.grad_clip >= 0, "sgd: grad_clip must be non-negative (0 = off), got {}",
                config_.grad_clip);
}

double Sgd::clip_and_step(double lr, const GradientScaling& scaling) {
  double coefficient = 1.0;  // what 16-bit gradients are multiplied by as they are widened
  const double norm =
      clip_and_count_step(slices_, config_.grad_clip, *kernels_, "sgd", step_, reduce_norm_, scaling, &coefficient);
  if (!std::isfinite(norm)) return norm;  // an overflow under loss scaling: the step is skipped
  float* buffer = state_.as<float>();
  for (const auto& slice : slices_) {
    const double decay = slice.weight_decay ? config_.weight_decay : 0.0;
    for_each_gradient_run(slice, static_cast<float>(coefficient), widening_scratch_,
                          [&](std::int64_t offset, const float* grad, std::int64_t n) {
                            kernels_->sgd_update(slice.param + offset, grad, buffer + offset, n, lr, config_.momentum, decay, step_);
                          });
    buffer += slice.numel;
  }
  return norm;
}

}  // namespace sb::optim
