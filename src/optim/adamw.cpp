// SPDX-License-Identifier: Apache-2.0
// AdamW step with global-norm clipping, one kernel call per parameter slice. Leaves out
// fused multi-tensor kernels: a GPT has 16 slices, so per-slice launches cost nothing here.
#include "optim/adamw.hpp"

#include <cmath>
#include <utility>

#include "core/check.hpp"
#include "optim/gradient_clipping.hpp"
#include "optim/storage_gradients.hpp"

namespace sb::optim {

AdamW::AdamW(std::vector<ParameterSlice> slices, const AdamWConfig& config,
             kernels::Backend backend, MemoryTracker& tracker)
    : slices_(std::move(slices)),
      config_(config),
      kernels_(&kernels::kernels_for(backend)),
      numel_(checked_total_numel(slices_, "adamw")),
      state_(tracker, MemoryCategory::optimizer, 2 * numel_ * static_cast<std::int64_t>(sizeof(float)),
             "adamw m,v", kernels::memory_device(backend)),
      widening_scratch_(widening_scratch(slices_, tracker, kernels::memory_device(backend))) {
  SB_USER_CHECK(config_.lr >= 0, "adamw: lr must be non-negative, got {}", config_.lr);
  SB_USER_CHECK(config_.beta1 >= 0 && config_.beta1 < 1, "adamw: beta1 must be in [0, 1), got {}",
                config_.beta1);
  SB_USER_CHECK(config_.beta2 >= 0 && config_.beta2 < 1, "adamw: beta2 must be in [0, 1), got {}",
                config_.beta2);
  SB_USER_CHECK(config_.eps > 0, "adamw: eps must be positive, got {}", config_.eps);
  SB_USER_CHECK(config_.weight_decay >= 0, "adamw: weight_decay must be non-negative, got {}",
                config_.weight_decay);
  SB_USER_CHECK(config_.grad_clip >= 0, "adamw: grad_clip must be non-negative (0 = off), got {}",
                config_.grad_clip);
}

double AdamW::clip_and_step(double lr, const GradientScaling& scaling) {
  double coefficient = 1.0;  // what 16-bit gradients are multiplied by as they are widened
  const double norm =
      clip_and_count_step(slices_, config_.grad_clip, *kernels_, "adamw", step_, reduce_norm_, scaling, &coefficient);
  if (!std::isfinite(norm)) return norm;  // an overflow under loss scaling: the step is skipped
  float* m = state_.as<float>();
  float* v = m + numel_;
  for (const auto& slice : slices_) {
    const double decay = slice.weight_decay ? config_.weight_decay : 0.0;
    for_each_gradient_run(slice, static_cast<float>(coefficient), widening_scratch_,
                          [&](std::int64_t offset, const float* grad, std::int64_t n) {
                            kernels_->adamw_update(slice.param + offset, grad, m + offset, v + offset, n, lr, config_.beta1, config_.beta2,
                                                   config_.eps, decay, step_);
                          });
    m += slice.numel;
    v += slice.numel;
  }
  return norm;
}

}  // namespace sb::optim
