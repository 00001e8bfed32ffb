// SPDX-License-Identifier: Apache-2.0
// CUDA AdamW for one tensor, the reference's operation order with its scalars formed in
// double on the host and rounded once to float. Leaves out multi-tensor (fused) launches.
#include <cmath>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

SB_DECLARE_ADAMW_UPDATE(float, float) {
  SB_CHECK(step >= 1, "adamw_update: step must start at 1, got {}", step);
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const float decay = static_cast<float>(1.0 - lr * weight_decay);
  const float b1 = static_cast<float>(beta1), one_minus_b1 = static_cast<float>(1.0 - beta1);
  const float b2 = static_cast<float>(beta2), one_minus_b2 = static_cast<float>(1.0 - beta2);
  const float step_size = static_cast<float>(lr / bias_correction1);
  const float bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const float epsilon = static_cast<float>(eps);
  for_each_index(N, [=] __device__(i64 i) {
    const float g = grads[i];
    const float p = params[i] * decay;
    const float m_new = b1 * m[i] + one_minus_b1 * g;
    const float v_new = b2 * v[i] + one_minus_b2 * g * g;
    const float denom = sqrtf(v_new) / bias_correction2_sqrt + epsilon;
    m[i] = m_new;
    v[i] = v_new;
    params[i] = p - step_size * (m_new / denom);
  });
}

}  // namespace sb::kernels::cuda
