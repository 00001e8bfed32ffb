// SPDX-License-Identifier: Apache-2.0
// Global-norm gradient clipping shared by AdamW and SGD.
#include "optim/gradient_clipping.hpp"

#include <algorithm>
#include <cmath>

#include "core/check.hpp"
#include "optim/storage_gradients.hpp"

namespace sb::optim {

std::int64_t checked_total_numel(const std::vector<ParameterSlice>& slices, std::string_view optimizer) {
  std::int64_t total = 0;
  for (const auto& slice : slices) {
    SB_CHECK(slice.numel >= 0 && (slice.numel == 0 || (slice.param && (slice.grad || slice.grad_bits))),
             "{}: parameter slice '{}' has no memory", optimizer, slice.name);
    total += slice.numel;
  }
  return total;
}

double clip_gradients_by_global_norm(const std::vector<ParameterSlice>& slices, double max_norm,
                                     const kernels::KernelTable& kernels, std::string_view optimizer,
                                     std::int64_t step, const SquaredNormReducer& reduce,
                                     const GradientScaling& scaling, double* widening_coefficient) {
  double squared = 0.0;
  bool widened = false;  // some slice holds 16-bit gradients
  for (const auto& slice : slices) {
    widened = widened || !slice.grad;
    if (reduce && slice.replica) continue;  // another rank counts it in the reduced sum
    squared += slice.grad ? kernels.squared_norm(slice.grad, slice.numel)
                          : squared_norm_of_bits(slice.grad_bits, slice.numel, slice.grad_storage);
  }
  SB_CHECK(!widened || widening_coefficient, "{}: 16-bit gradients, and no caller to widen them", optimizer);
  if (reduce) squared = reduce(squared);
  SB_CHECK(scaling.loss_scale > 0, "{}: loss scale {} at step {}", optimizer, scaling.loss_scale, step);
  const double norm = std::sqrt(squared) / scaling.loss_scale;
  if (!std::isfinite(norm) && scaling.skip_non_finite) return norm;
  SB_CHECK(std::isfinite(norm), "{}: gradient norm is {} at step {}", optimizer, norm, step);
  double coef = 1.0 / scaling.loss_scale;
  if (max_norm > 0) coef *= std::min(1.0, max_norm / (norm + 1e-6));  // torch.nn.utils.clip_grad_norm_
  if (widening_coefficient) *widening_coefficient = coef;
  if (coef != 1.0)
    for (const auto& slice : slices)
      if (slice.grad) kernels.scale_inplace(slice.grad, slice.numel, coef);
  return norm;
}

double clip_and_count_step(const std::vector<ParameterSlice>& slices, double max_norm,
                           const kernels::KernelTable& kernels, std::string_view optimizer, std::int64_t& step,
                           const SquaredNormReducer& reduce, const GradientScaling& scaling,
                           double* widening_coefficient) {
  const double norm = clip_gradients_by_global_norm(slices, max_norm, kernels, optimizer, step + 1, reduce, scaling,
                                                    widening_coefficient);
  if (std::isfinite(norm)) ++step;
  return norm;
}

}  // namespace sb::optim
