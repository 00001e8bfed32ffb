// SPDX-License-Identifier: Apache-2.0
// Softmax + cross-entropy with Kokkos over rows, each row's max, exp-sum and scaling
// vectorised. Leaves out the mean over rows: the caller weights rows through dlosses.
#include <cmath>

#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace sb::kernels::cpu {

namespace {

// probs = softmax(x); returns -log probs[target] as log(sum) - (x[target] - max).
SB_CPU_VECTOR_CLONES
float crossentropy_forward_row(float* probs, const float* x, std::int32_t target, i64 V) {
  float max_logit = x[0];
#pragma omp simd reduction(max : max_logit)
  for (i64 i = 0; i < V; ++i) max_logit = max_logit > x[i] ? max_logit : x[i];
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (i64 i = 0; i < V; ++i) {
    probs[i] = exp_approx(x[i] - max_logit);
    sum += probs[i];
  }
  const float inv_sum = 1.0f / sum;
  for (i64 i = 0; i < V; ++i) probs[i] *= inv_sum;
  return std::log(sum) - (x[target] - max_logit);
}

}  // namespace

SB_DECLARE_CROSSENTROPY_FORWARD(float, float) {
  // Checked before the parallel region, which cannot throw.
  for (i64 r = 0; r < BT; ++r) {
    SB_CHECK(targets[r] >= 0 && targets[r] < V,
             "crossentropy: target {} at row {} is outside [0, {})", targets[r], r, V);
  }
  parallel_for_each("sb::crossentropy_forward", BT, [=](i64 r) {
    losses[r] = crossentropy_forward_row(probs + r * V, logits + r * V, targets[r], V);
  });
}

SB_DECLARE_CROSSENTROPY_BACKWARD(float, float) {
  parallel_for_each("sb::crossentropy_backward", BT, [=](i64 r) {
    const float* p = probs + r * V;
    float* dx = dlogits + r * V;
    const float d = dlosses[r];
    for (i64 i = 0; i < V; ++i) dx[i] += p[i] * d;
    dx[targets[r]] -= d;
  });
}

}  // namespace sb::kernels::cpu
