// SPDX-License-Identifier: Apache-2.0
// Softmax + cross-entropy with Kokkos over rows, each row's max, exp-sum and scaling
// vectorised. bf16 and fp16 logits, probabilities and gradients as they lie
// (cpu/sixteen_bit_elementwise.hpp): a block of rows widened into the thread's cache, the float
// row functions run there and their results narrowed, so the bits are those of widening the
// whole tensor, as StorageKernels did, in a pass that stays in cache.
// Leaves out the mean over rows: the caller weights rows through dlosses.
#include <cmath>
#include <type_traits>

#include "kernels/cpu/sixteen_bit_elementwise.hpp"
#include "kernels/cpu/fp16_rows.hpp"
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

// dx += p d, then dx[target] -= d: the gradient of d * -log p[target] through the softmax.
void crossentropy_backward_row(float* dx, const float* p, std::int32_t target, float d, i64 V) {
  for (i64 i = 0; i < V; ++i) dx[i] += p[i] * d;
  dx[target] -= d;
}

// Checked before the parallel region, which cannot throw.
void check_targets(const std::int32_t* targets, i64 BT, i64 V) {
  for (i64 r = 0; r < BT; ++r) {
    SB_CHECK(targets[r] >= 0 && targets[r] < V,
             "crossentropy: target {} at row {} is outside [0, {})", targets[r], r, V);
  }
}

// 16-bit S: `rows` rows from r0 widened into the thread's cache (x: logits or dlogits, y: probs
// to write or read), run by the float row functions, the written ones narrowed back.
template <class S>
void crossentropy_forward_rows(float* losses, S* probs, const S* logits, const std::int32_t* targets, i64 r0,
                               i64 rows, i64 V) {
  float* x = thread_scratch(2 * rows * V);
  float* p = x + rows * V;
  widen_values(x, logits + r0 * V, rows * V);
  for (i64 r = 0; r < rows; ++r) losses[r0 + r] = crossentropy_forward_row(p + r * V, x + r * V, targets[r0 + r], V);
  narrow_values(probs + r0 * V, p, rows * V);
}

template <class S>
void crossentropy_backward_rows(S* dlogits, const S* probs, const std::int32_t* targets, const float* dlosses,
                                i64 r0, i64 rows, i64 V) {
  float* dx = thread_scratch(2 * rows * V);
  float* p = dx + rows * V;
  widen_values(dx, dlogits + r0 * V, rows * V);
  widen_values(p, probs + r0 * V, rows * V);
  for (i64 r = 0; r < rows; ++r) crossentropy_backward_row(dx + r * V, p + r * V, targets[r0 + r], dlosses[r0 + r], V);
  narrow_values(dlogits + r0 * V, dx, rows * V);
}

template <class S>
void crossentropy_forward_all(float* losses, S* probs, const S* logits, const std::int32_t* targets, i64 BT, i64 V) {
  check_targets(targets, BT, V);
  if constexpr (std::is_same_v<S, float>) {
    parallel_for_each("sb::crossentropy_forward", BT, [=](i64 r) {
      losses[r] = crossentropy_forward_row(probs + r * V, logits + r * V, targets[r], V);
    });
  } else {
    parallel_for_row_blocks("sb::crossentropy_forward", BT, V, [=](i64 r0, i64 rows) {
      crossentropy_forward_rows(losses, probs, logits, targets, r0, rows, V);
    });
  }
}

template <class S>
void crossentropy_backward_all(S* dlogits, const S* probs, const std::int32_t* targets, const float* dlosses, i64 BT,
                               i64 V) {
  if constexpr (std::is_same_v<S, float>) {
    parallel_for_each("sb::crossentropy_backward", BT, [=](i64 r) {
      crossentropy_backward_row(dlogits + r * V, probs + r * V, targets[r], dlosses[r], V);
    });
  } else {
    parallel_for_row_blocks("sb::crossentropy_backward", BT, V, [=](i64 r0, i64 rows) {
      crossentropy_backward_rows(dlogits, probs, targets, dlosses, r0, rows, V);
    });
  }
}

}  // namespace

SB_DECLARE_CROSSENTROPY_FORWARD(float, float) { crossentropy_forward_all(losses, probs, logits, targets, BT, V); }
SB_DECLARE_CROSSENTROPY_FORWARD(bf16, float) { crossentropy_forward_all(losses, probs, logits, targets, BT, V); }
SB_DECLARE_CROSSENTROPY_FORWARD(fp16, float) { crossentropy_forward_all(losses, probs, logits, targets, BT, V); }
SB_DECLARE_CROSSENTROPY_BACKWARD(float, float) {
  crossentropy_backward_all(dlogits, probs, targets, dlosses, BT, V);
}
SB_DECLARE_CROSSENTROPY_BACKWARD(bf16, float) {
  crossentropy_backward_all(dlogits, probs, targets, dlosses, BT, V);
}
SB_DECLARE_CROSSENTROPY_BACKWARD(fp16, float) {
  crossentropy_backward_all(dlogits, probs, targets, dlosses, BT, V);
}

}  // namespace sb::kernels::cpu
