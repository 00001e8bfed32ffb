// SPDX-License-Identifier: Apache-2.0
// AdamW for one tensor with Kokkos over chunks, the same operation order as the reference
// (torch.optim.AdamW). Leaves out multi-tensor fusion and amsgrad.
#include <cmath>

#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

namespace {

struct AdamwScalars {
  float decay, beta1, one_minus_beta1, beta2, one_minus_beta2, step_size, bias_correction2_sqrt,
      eps;
};

SB_CPU_VECTOR_CLONES
void adamw_chunk(float* params, const float* grads, float* m, float* v, i64 n,
                 const AdamwScalars s) {
  for (i64 i = 0; i < n; ++i) {
    const float g = grads[i];
    const float p = params[i] * s.decay;
    const float m_new = s.beta1 * m[i] + s.one_minus_beta1 * g;
    const float v_new = s.beta2 * v[i] + s.one_minus_beta2 * g * g;
    const float denom = std::sqrt(v_new) / s.bias_correction2_sqrt + s.eps;
    params[i] = p - s.step_size * (m_new / denom);
    m[i] = m_new;
    v[i] = v_new;
  }
}

}  // namespace

SB_DECLARE_ADAMW_UPDATE(float, float) {
  SB_CHECK(step >= 1, "adamw_update: step must start at 1, got {}", step);
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const AdamwScalars s{static_cast<float>(1.0 - lr * weight_decay),
                       static_cast<float>(beta1),
                       static_cast<float>(1.0 - beta1),
                       static_cast<float>(beta2),
                       static_cast<float>(1.0 - beta2),
                       static_cast<float>(lr / bias_correction1),
                       static_cast<float>(std::sqrt(bias_correction2)),
                       static_cast<float>(eps)};
  parallel_for_chunks("sb::adamw_update", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    adamw_chunk(params + begin, grads + begin, m + begin, v + begin, end - begin, s);
  });
}

}  // namespace sb::kernels::cpu
