// SPDX-License-Identifier: Apache-2.0
// Reference AdamW for one tensor, in the operation order of torch.optim.AdamW (single tensor).
// Leaves out threading, amsgrad, maximize and fused multi-tensor variants.
#include <cmath>

#include "core/check.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

// PyTorch: p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= (lr / (1 - b1^step)) m / (sqrt(v) / sqrt(1 - b2^step) + eps). Scalars are formed in
// double and rounded once to T, as PyTorch does with Python floats.
template <class T>
SB_DECLARE_ADAMW_UPDATE(T, T) {
  SB_CHECK(step >= 1, "adamw_update: step must start at 1, got {}", step);
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const T decay = static_cast<T>(1.0 - lr * weight_decay);
  const T b1 = static_cast<T>(beta1), one_minus_b1 = static_cast<T>(1.0 - beta1);
  const T b2 = static_cast<T>(beta2), one_minus_b2 = static_cast<T>(1.0 - beta2);
  const T step_size = static_cast<T>(lr / bias_correction1);
  const T bias_correction2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  const T epsilon = static_cast<T>(eps);
  for (i64 i = 0; i < N; ++i) {
    const T g = grads[i];
    params[i] *= decay;
    m[i] = b1 * m[i] + one_minus_b1 * g;
    v[i] = b2 * v[i] + one_minus_b2 * g * g;
    const T denom = std::sqrt(v[i]) / bias_correction2_sqrt + epsilon;
    params[i] -= step_size * (m[i] / denom);
  }
}

template SB_DECLARE_ADAMW_UPDATE(float, float);
template SB_DECLARE_ADAMW_UPDATE(double, double);

}  // namespace sb::kernels::reference
