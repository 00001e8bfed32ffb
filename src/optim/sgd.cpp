// SGD step with optional global-norm clipping, one kernel call per parameter slice. Leaves out
// fused multi-tensor kernels and Nesterov momentum.
#include "optim/sgd.hpp"

#include <cmath>
#include <utility>

#include "core/check.hpp"

namespace sb::optim {

namespace {
std::int64_t total_numel(const std::vector<ParameterSlice>& slices) {
  std::int64_t n = 0;
  for (const auto& slice : slices) n += slice.numel;
  return n;
}
}  // namespace

Sgd::Sgd(std::vector<ParameterSlice> slices, const SgdConfig& config, kernels::Backend backend,
         MemoryTracker& tracker)
    : slices_(std::move(slices)),
      config_(config),
      kernels_(&kernels::kernels_for(backend)),
      numel_(total_numel(slices_)),
      state_(tracker, MemoryCategory::optimizer, numel_ * static_cast<std::int64_t>(sizeof(float)),
             "sgd momentum") {
  SB_USER_CHECK(config_.lr >= 0, "sgd: lr must be non-negative, got {}", config_.lr);
  SB_USER_CHECK(config_.momentum >= 0 && config_.momentum < 1,
                "sgd: momentum must be in [0, 1), got {}", config_.momentum);
  SB_USER_CHECK(config_.weight_decay >= 0, "sgd: weight_decay must be non-negative, got {}",
                config_.weight_decay);
  SB_USER_CHECK(config_.grad_clip >= 0, "sgd: grad_clip must be non-negative (0 = off), got {}",
                config_.grad_clip);
  for (const auto& slice : slices_) {
    SB_CHECK(slice.numel >= 0 && (slice.numel == 0 || (slice.param && slice.grad)),
             "sgd: parameter slice '{}' has no memory", slice.name);
  }
}

double Sgd::clip_and_step(double lr) {
  double squared = 0.0;
  for (const auto& slice : slices_) squared += kernels_->squared_norm(slice.grad, slice.numel);
  const double norm = std::sqrt(squared);
  SB_CHECK(std::isfinite(norm), "sgd: gradient norm is {} at step {}", norm, step_ + 1);

  if (config_.grad_clip > 0) {
    const double coef = config_.grad_clip / (norm + 1e-6);  // torch.nn.utils.clip_grad_norm_
    if (coef < 1.0) {
      for (const auto& slice : slices_) kernels_->scale_inplace(slice.grad, slice.numel, coef);
    }
  }

  ++step_;
  float* buffer = state_.as<float>();
  for (const auto& slice : slices_) {
    const double decay = slice.weight_decay ? config_.weight_decay : 0.0;
    kernels_->sgd_update(slice.param, slice.grad, buffer, slice.numel, lr, config_.momentum, decay,
                         step_);
    buffer += slice.numel;
  }
  return norm;
}

}  // namespace sb::optim
