// SPDX-License-Identifier: Apache-2.0
// CUDA causal multi-head attention, materialising att (B,NH,T,T) as the reference does, with
// the four products of each (batch, head) through cuBLAS strided-batched SGEMMs (one call per
// batch element over its heads; the head stride is hs inside a qkv row) and the causal softmax
// and its backward as row kernels, llm.c's layout. The scores Q·Kᵀ are computed whole and
// masked by the softmax. Backward keeps one batch element's score gradients (NH,T,T) in the
// context's scratch at a time. Deterministic: no atomics, fixed cuBLAS algorithms. Leaves out
// flash-style tiling (no T×T in memory) and tensor cores: 16-bit storage runs
// storage_attention.cu (all heads in one batched call, att in 16 bits).
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

// One row (b, h, t) of att (B,NH,T,T) holding scale·q·k for every t2: the causal softmax over
// t2 <= t in place, zeros above the diagonal.
__global__ void causal_softmax_rows(float* att, i64 T) {
  const i64 row = blockIdx.x;  // (b·NH + h)·T + t
  const i64 t = row % T;
  float* a = att + row * T;
  float local_max = -INFINITY;
  for (i64 t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) local_max = fmaxf(local_max, a[t2]);
  const float max_score = block_max(local_max);
  float local_sum = 0.0f;
  for (i64 t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) {
    const float e = expf(a[t2] - max_score);
    a[t2] = e;
    local_sum += e;
  }
  const float inverse = 1.0f / block_sum(local_sum);
  for (i64 t2 = threadIdx.x; t2 < T; t2 += blockDim.x) a[t2] = t2 <= t ? a[t2] * inverse : 0.0f;
}

// One row (h, t) of one batch element: datt (NH,T,T) = dy·vᵀ becomes the score gradient
// dpreatt = att (datt - sum(att datt)) scale in place, zero above the diagonal.
__global__ void causal_softmax_backward_rows(float* datt, const float* att, i64 T, float scale) {
  const i64 row = blockIdx.x;  // h·T + t within the batch element
  const i64 t = row % T;
  float* d = datt + row * T;
  const float* a = att + row * T;
  float local = 0.0f;
  for (i64 t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) local += a[t2] * d[t2];
  const float weighted_sum = block_sum(local);
  for (i64 t2 = threadIdx.x; t2 < T; t2 += blockDim.x)
    d[t2] = t2 <= t ? a[t2] * (d[t2] - weighted_sum) * scale : 0.0f;
}

// Column-major C (m,n) = alpha op(A) op(B) + beta C for `heads` matrices `stride_*` apart.
void batched_sgemm(CudaContext& ctx, cublasOperation_t op_a, cublasOperation_t op_b, i64 m, i64 n, i64 k,
                   float alpha, const float* a, i64 lda, i64 stride_a, const float* b, i64 ldb,
                   i64 stride_b, float beta, float* c, i64 ldc, i64 stride_c, i64 heads) {
  SB_CUBLAS_CHECK(cublasSgemmStridedBatched_64(ctx.cublas(), op_a, op_b, m, n, k, &alpha, a, lda, stride_a, b,
                                               ldb, stride_b, &beta, c, ldc, stride_c, heads));
}

}  // namespace

// Per batch element b, head h (column-major views of row-major tensors): Qc, Kc, Vc = Q, K, V
// transposed (hs,T), ld 3C, heads hs apart; attc = attᵀ (T,T), ld T; outc = outᵀ (hs,T), ld C.
//   attc = scale Kcᵀ Qc;  softmax;  outc = Vc attc
SB_DECLARE_ATTENTION_FORWARD(float, float) {
  SB_CHECK(NH > 0 && C % NH == 0, "attention: C={} is not a multiple of NH={}", C, NH);
  if (B * T_ == 0) return;
  CudaContext& ctx = default_context();
  const i64 hs = C / NH, C3 = 3 * C, TT = T_ * T_;
  const float scale = 1.0f / sqrtf(static_cast<float>(hs));
  for (i64 b = 0; b < B; ++b) {
    const float* q = qkv + b * T_ * C3;
    batched_sgemm(ctx, CUBLAS_OP_T, CUBLAS_OP_N, T_, T_, hs, scale, q + C, C3, hs, q, C3, hs, 0.0f,
                  att + b * NH * TT, T_, TT, NH);
  }
  causal_softmax_rows<<<static_cast<unsigned>(B * NH * T_), kRowThreads, 0, ctx.stream()>>>(att, T_);
  SB_CUDA_CHECK_LAUNCH();
  for (i64 b = 0; b < B; ++b) {
    const float* v = qkv + b * T_ * C3 + 2 * C;
    batched_sgemm(ctx, CUBLAS_OP_N, CUBLAS_OP_N, hs, T_, T_, 1.0f, v, C3, hs, att + b * NH * TT, T_, TT, 0.0f,
                  out + b * T_ * C, C, hs, NH);
  }
}

//   dattc = Vcᵀ dyc;  dpre = softmax backward (scale folded in);
//   dqc += Kc dprec;  dkc += Qc dprecᵀ;  dvc += dyc attcᵀ
SB_DECLARE_ATTENTION_BACKWARD(float, float) {
  SB_CHECK(NH > 0 && C % NH == 0, "attention: C={} is not a multiple of NH={}", C, NH);
  if (B * T_ == 0) return;
  CudaContext& ctx = default_context();
  const i64 hs = C / NH, C3 = 3 * C, TT = T_ * T_;
  const float scale = 1.0f / sqrtf(static_cast<float>(hs));
  auto* dpre = static_cast<float*>(ctx.scratch(static_cast<std::size_t>(NH * TT) * sizeof(float)));  // (NH,T,T)
  for (i64 b = 0; b < B; ++b) {
    const float* q = qkv + b * T_ * C3;
    const float* k = q + C;
    const float* v = q + 2 * C;
    const float* dy = dout + b * T_ * C;
    const float* a = att + b * NH * TT;
    float* dq = dqkv + b * T_ * C3;
    batched_sgemm(ctx, CUBLAS_OP_T, CUBLAS_OP_N, T_, T_, hs, 1.0f, v, C3, hs, dy, C, hs, 0.0f, dpre, T_, TT, NH);
    causal_softmax_backward_rows<<<static_cast<unsigned>(NH * T_), kRowThreads, 0, ctx.stream()>>>(dpre, a, T_, scale);
    SB_CUDA_CHECK_LAUNCH();
    batched_sgemm(ctx, CUBLAS_OP_N, CUBLAS_OP_N, hs, T_, T_, 1.0f, k, C3, hs, dpre, T_, TT, 1.0f, dq, C3, hs, NH);
    batched_sgemm(ctx, CUBLAS_OP_N, CUBLAS_OP_T, hs, T_, T_, 1.0f, q, C3, hs, dpre, T_, TT, 1.0f, dq + C, C3, hs, NH);
    batched_sgemm(ctx, CUBLAS_OP_N, CUBLAS_OP_T, hs, T_, T_, 1.0f, dy, C, hs, a, T_, TT, 1.0f, dq + 2 * C, C3, hs, NH);
  }
}

}  // namespace sb::kernels::cuda
