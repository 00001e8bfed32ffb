// SPDX-License-Identifier: Apache-2.0
// Causal attention: Kokkos over (batch, head), each head's products as single-threaded sgemm
// on lower-triangular row blocks. Leaves out flash tiling: the contract stores (T,T) att.
#include <cblas.h>

#include <cmath>

#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace sb::kernels::cpu {

namespace {

// Query rows per block: block r only needs key columns [0, r0 + rows), so the products skip
// most of the upper triangle while each sgemm stays large enough to be efficient.
constexpr i64 kAttentionRowBlock = 32;

// row (T) holds scaled scores in [0, n); becomes softmax probabilities there, zero in [n, T).
SB_CPU_VECTOR_CLONES
void causal_softmax_row(float* row, i64 n, i64 T) {
  float max_score = row[0];
#pragma omp simd reduction(max : max_score)
  for (i64 i = 0; i < n; ++i) max_score = max_score > row[i] ? max_score : row[i];
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (i64 i = 0; i < n; ++i) {
    row[i] = exp_approx(row[i] - max_score);
    sum += row[i];
  }
  const float inv_sum = 1.0f / sum;
  for (i64 i = 0; i < n; ++i) row[i] *= inv_sum;
  for (i64 i = n; i < T; ++i) row[i] = 0.0f;
}

// datt (in, [0, n)) -> dpreatt = scale * att (datt - sum(att datt)) in [0, n), zero in
// [n, width): the softmax backward of one row.
SB_CPU_VECTOR_CLONES
void causal_softmax_backward_row(float* datt, const float* att, i64 n, i64 width, float scale) {
  float weighted_sum = 0;
#pragma omp simd reduction(+ : weighted_sum)
  for (i64 i = 0; i < n; ++i) weighted_sum += att[i] * datt[i];
  for (i64 i = 0; i < n; ++i) datt[i] = scale * att[i] * (datt[i] - weighted_sum);
  for (i64 i = n; i < width; ++i) datt[i] = 0.0f;
}

void check_heads(i64 C, i64 NH) {
  SB_CHECK(NH > 0 && C % NH == 0, "attention: C={} is not a multiple of NH={}", C, NH);
}

// Row-major sgemm with 64-bit extents; every call here is one head, far below 2^31.
void sgemm(CBLAS_TRANSPOSE trans_a, CBLAS_TRANSPOSE trans_b, i64 m, i64 n, i64 k, float alpha,
           const float* a, i64 lda, const float* b, i64 ldb, float beta, float* c, i64 ldc) {
  cblas_sgemm(CblasRowMajor, trans_a, trans_b, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

}  // namespace

// Per (b, h): att = softmax(scale q k^T) masked causally, out_h = att v. q, k, v of head h
// are (T, hs) column slices of qkv with row stride 3C; sgemm reads them in place. OpenBLAS
// runs single-threaded inside the Kokkos region (it detects the enclosing OpenMP team).
SB_DECLARE_ATTENTION_FORWARD(float, float) {
  check_heads(C, NH);
  const i64 hs = C / NH, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  parallel_for_each("sb::attention_forward", B * NH, [=](i64 bh) {
    const i64 b = bh / NH, h = bh % NH;
    const float* q = qkv + b * T_ * C3 + h * hs;
    const float* k = q + C;
    const float* v = q + 2 * C;
    float* att_bh = att + bh * T_ * T_;
    float* out_bh = out + b * T_ * C + h * hs;
    for (i64 r0 = 0; r0 < T_; r0 += kAttentionRowBlock) {
      const i64 rows = std::min(kAttentionRowBlock, T_ - r0), cols = r0 + rows;
      sgemm(CblasNoTrans, CblasTrans, rows, cols, hs, scale, q + r0 * C3, C3, k, C3, 0.0f,
            att_bh + r0 * T_, T_);
      for (i64 t = r0; t < r0 + rows; ++t) causal_softmax_row(att_bh + t * T_, t + 1, T_);
      sgemm(CblasNoTrans, CblasNoTrans, rows, hs, cols, 1.0f, att_bh + r0 * T_, T_, v, C3, 0.0f,
            out_bh + r0 * C, C);
    }
  });
}

// Per (b, h), with a (T,T) per-thread scratch for dpreatt:
//   datt = dy v^T, dpreatt = softmax backward (in place), dq += dpreatt k,
//   dk += dpreatt^T q, dv += att^T dy.
// One task owns all of head h of batch b, so the accumulations into dk/dv from every later
// query position never race, and each is summed in a fixed order.
SB_DECLARE_ATTENTION_BACKWARD(float, float) {
  check_heads(C, NH);
  const i64 hs = C / NH, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  parallel_for_each("sb::attention_backward", B * NH, [=](i64 bh) {
    const i64 b = bh / NH, h = bh % NH;
    const float* q = qkv + b * T_ * C3 + h * hs;
    const float* k = q + C;
    const float* v = q + 2 * C;
    float* dq = dqkv + b * T_ * C3 + h * hs;
    float* dk = dq + C;
    float* dv = dq + 2 * C;
    const float* dy = dout + b * T_ * C + h * hs;
    const float* att_bh = att + bh * T_ * T_;
    float* dpreatt = thread_scratch(T_ * T_);
    for (i64 r0 = 0; r0 < T_; r0 += kAttentionRowBlock) {
      const i64 rows = std::min(kAttentionRowBlock, T_ - r0), cols = r0 + rows;
      sgemm(CblasNoTrans, CblasTrans, rows, cols, hs, 1.0f, dy + r0 * C, C, v, C3, 0.0f,
            dpreatt + r0 * T_, T_);
      for (i64 t = r0; t < r0 + rows; ++t)
        causal_softmax_backward_row(dpreatt + t * T_, att_bh + t * T_, t + 1, cols, scale);
      sgemm(CblasNoTrans, CblasNoTrans, rows, hs, cols, 1.0f, dpreatt + r0 * T_, T_, k, C3, 1.0f,
            dq + r0 * C3, C3);
    }
    // Key/value rows [c0, c1) receive from query rows t >= c0 only.
    for (i64 c0 = 0; c0 < T_; c0 += kAttentionRowBlock) {
      const i64 width = std::min(kAttentionRowBlock, T_ - c0), depth = T_ - c0;
      sgemm(CblasTrans, CblasNoTrans, width, hs, depth, 1.0f, dpreatt + c0 * T_ + c0, T_,
            q + c0 * C3, C3, 1.0f, dk + c0 * C3, C3);
      sgemm(CblasTrans, CblasNoTrans, width, hs, depth, 1.0f, att_bh + c0 * T_ + c0, T_,
            dy + c0 * C, C, 1.0f, dv + c0 * C3, C3);
    }
  });
}

}  // namespace sb::kernels::cpu
