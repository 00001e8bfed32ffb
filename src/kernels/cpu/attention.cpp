// SPDX-License-Identifier: Apache-2.0
// Causal attention: Kokkos over (batch, head), each head's products as single-threaded sgemm
// on lower-triangular row blocks; bf16 and fp16 (cpu/sixteen_bit_elementwise.hpp) a head at a
// time widened into the thread's cache. Leaves out flash tiling: the contract stores (T,T) att.
#include <cblas.h>

#include <cmath>

#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/sixteen_bit_elementwise.hpp"
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

// One head's forward: q, k, v (T,hs) rows `ld` apart, att_bh (T,T), out_h (T,hs) rows `ld_out`
// apart: att = softmax(scale q k^T) masked causally, out_h = att v, in row blocks.
void head_forward(const float* q, const float* k, const float* v, i64 ld, float* att_bh, float* out_h,
                  i64 ld_out, i64 T_, i64 hs, float scale) {
  for (i64 r0 = 0; r0 < T_; r0 += kAttentionRowBlock) {
    const i64 rows = std::min(kAttentionRowBlock, T_ - r0), cols = r0 + rows;
    sgemm(CblasNoTrans, CblasTrans, rows, cols, hs, scale, q + r0 * ld, ld, k, ld, 0.0f, att_bh + r0 * T_, T_);
    for (i64 t = r0; t < r0 + rows; ++t) causal_softmax_row(att_bh + t * T_, t + 1, T_);
    sgemm(CblasNoTrans, CblasNoTrans, rows, hs, cols, 1.0f, att_bh + r0 * T_, T_, v, ld, 0.0f, out_h + r0 * ld_out,
          ld_out);
  }
}

// One head's backward, with dpreatt (T,T) scratch: datt = dy v^T, dpreatt = softmax backward (in
// place), dq += dpreatt k, dk += dpreatt^T q, dv += att^T dy. q, k, v, dq, dk, dv rows `ld`
// apart, dy rows `ld_dy` apart.
void head_backward(float* dq, float* dk, float* dv, const float* q, const float* k, const float* v, i64 ld,
                   const float* dy, i64 ld_dy, const float* att_bh, float* dpreatt, i64 T_, i64 hs, float scale) {
  for (i64 r0 = 0; r0 < T_; r0 += kAttentionRowBlock) {
    const i64 rows = std::min(kAttentionRowBlock, T_ - r0), cols = r0 + rows;
    sgemm(CblasNoTrans, CblasTrans, rows, cols, hs, 1.0f, dy + r0 * ld_dy, ld_dy, v, ld, 0.0f, dpreatt + r0 * T_, T_);
    for (i64 t = r0; t < r0 + rows; ++t)
      causal_softmax_backward_row(dpreatt + t * T_, att_bh + t * T_, t + 1, cols, scale);
    sgemm(CblasNoTrans, CblasNoTrans, rows, hs, cols, 1.0f, dpreatt + r0 * T_, T_, k, ld, 1.0f, dq + r0 * ld, ld);
  }
  // Key/value rows [c0, c1) receive from query rows t >= c0 only.
  for (i64 c0 = 0; c0 < T_; c0 += kAttentionRowBlock) {
    const i64 width = std::min(kAttentionRowBlock, T_ - c0), depth = T_ - c0;
    sgemm(CblasTrans, CblasNoTrans, width, hs, depth, 1.0f, dpreatt + c0 * T_ + c0, T_, q + c0 * ld, ld, 1.0f,
          dk + c0 * ld, ld);
    sgemm(CblasTrans, CblasNoTrans, width, hs, depth, 1.0f, att_bh + c0 * T_ + c0, T_, dy + c0 * ld_dy, ld_dy, 1.0f,
          dv + c0 * ld, ld);
  }
}

// ---- 16-bit storage: a head at a time widened into the thread's cache, the float head run
// there, its outputs rounded once (the bits of widening the whole tensors, in one pass over them).

// rows (T, hs) with rows `ld` apart <-> contiguous (T, hs)
template <class S>
void widen_head(float* out, const S* in, i64 ld, i64 T_, i64 hs) {
  widen_rows(out, in, ld, T_, hs);
}
template <class S>
void narrow_head(S* out, i64 ld, const float* in, i64 T_, i64 hs) {
  narrow_rows(out, ld, in, T_, hs);
}

// A head's q, k and v (or dq, dk, dv) slices of (T, 3C) rows <-> three contiguous (T, hs) heads
// at qkv, qkv + T·hs, qkv + 2·T·hs.
template <class S>
void widen_qkv_head(float* heads, const S* q, i64 C, i64 T_, i64 hs) {
  for (i64 part = 0; part < 3; ++part) widen_head(heads + part * T_ * hs, q + part * C, 3 * C, T_, hs);
}
template <class S>
void narrow_qkv_head(S* q, i64 C, const float* heads, i64 T_, i64 hs) {
  for (i64 part = 0; part < 3; ++part) narrow_head(q + part * C, 3 * C, heads + part * T_ * hs, T_, hs);
}

template <class S>
void sixteen_bit_attention_forward(S* out, S* att, const S* qkv, i64 B, i64 T_, i64 C, i64 NH) {
  check_heads(C, NH);
  const i64 hs = C / NH, C3 = 3 * C, head = T_ * hs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  parallel_for_each("sb::attention_forward", B * NH, [=](i64 bh) {
    const i64 b = bh / NH, h = bh % NH;
    const S* q = qkv + b * T_ * C3 + h * hs;
    float* qf = thread_scratch(4 * head + T_ * T_);
    float *kf = qf + head, *vf = kf + head, *outf = vf + head, *attf = outf + head;
    widen_qkv_head(qf, q, C, T_, hs);
    head_forward(qf, kf, vf, hs, attf, outf, hs, T_, hs, scale);
    narrow_values(att + bh * T_ * T_, attf, T_ * T_);
    narrow_head(out + b * T_ * C + h * hs, C, outf, T_, hs);
  });
}

template <class S>
void sixteen_bit_attention_backward(S* dqkv, const S* dout, const S* qkv, const S* att, i64 B, i64 T_, i64 C,
                                    i64 NH) {
  check_heads(C, NH);
  const i64 hs = C / NH, C3 = 3 * C, head = T_ * hs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  parallel_for_each("sb::attention_backward", B * NH, [=](i64 bh) {
    const i64 b = bh / NH, h = bh % NH;
    const S* q = qkv + b * T_ * C3 + h * hs;
    S* dq = dqkv + b * T_ * C3 + h * hs;
    float* qf = thread_scratch(7 * head + 2 * T_ * T_);
    float *kf = qf + head, *vf = kf + head, *dyf = vf + head, *dqf = dyf + head, *dkf = dqf + head;
    float *dvf = dkf + head, *attf = dvf + head, *dpreatt = attf + T_ * T_;
    widen_qkv_head(qf, q, C, T_, hs);
    widen_head(dyf, dout + b * T_ * C + h * hs, C, T_, hs);
    widen_qkv_head(dqf, dq, C, T_, hs);
    widen_values(attf, att + bh * T_ * T_, T_ * T_);
    head_backward(dqf, dkf, dvf, qf, kf, vf, hs, dyf, hs, attf, dpreatt, T_, hs, scale);
    narrow_qkv_head(dq, C, dqf, T_, hs);
  });
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
    head_forward(q, q + C, q + 2 * C, C3, att + bh * T_ * T_, out + b * T_ * C + h * hs, C, T_, hs, scale);
  });
}

// Per (b, h), with a (T,T) per-thread scratch for dpreatt. One task owns all of head h of batch
// b, so the accumulations into dk/dv from every later query position never race, and each is
// summed in a fixed order.
SB_DECLARE_ATTENTION_BACKWARD(float, float) {
  check_heads(C, NH);
  const i64 hs = C / NH, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  parallel_for_each("sb::attention_backward", B * NH, [=](i64 bh) {
    const i64 b = bh / NH, h = bh % NH;
    const float* q = qkv + b * T_ * C3 + h * hs;
    float* dq = dqkv + b * T_ * C3 + h * hs;
    head_backward(dq, dq + C, dq + 2 * C, q, q + C, q + 2 * C, C3, dout + b * T_ * C + h * hs, C,
                  att + bh * T_ * T_, thread_scratch(T_ * T_), T_, hs, scale);
  });
}

SB_DECLARE_ATTENTION_FORWARD(bf16, float) { sixteen_bit_attention_forward(out, att, qkv, B, T_, C, NH); }
SB_DECLARE_ATTENTION_FORWARD(fp16, float) { sixteen_bit_attention_forward(out, att, qkv, B, T_, C, NH); }
SB_DECLARE_ATTENTION_BACKWARD(bf16, float) {
  sixteen_bit_attention_backward(dqkv, dout, qkv, att, B, T_, C, NH);
}
SB_DECLARE_ATTENTION_BACKWARD(fp16, float) {
  sixteen_bit_attention_backward(dqkv, dout, qkv, att, B, T_, C, NH);
}

}  // namespace sb::kernels::cpu
