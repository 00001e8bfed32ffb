// Native 16-bit causal attention, llm.c's layout: q, k, v permuted out of qkv (B,T,3,NH,hs)
// into (B,NH,T,hs) so that each product is ONE cublasGemmStridedBatchedEx over all B·NH heads,
// 16-bit operands on tensor cores, fp32 accumulation (CUBLAS_COMPUTE_32F). The scores and att
// (B,NH,T,T) live in S — no T×T tensor in fp32 — with the causal softmax and its backward
// computed in float per row. Scratch (the context's): the permuted q, k, v, the head-major
// output or its gradient, and in backward dq, dk, dv and the score gradients (B,NH,T,T) in S.
// Leaves out flash-style tiling (att is kept, as the kernel interface asks) and skipping the
// masked upper triangle in the products.
#include <algorithm>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/native_storage.hpp"
#include "kernels/cuda/storage_types.cuh"

namespace sb::kernels::cuda::native {

namespace {

// qkv (B,T,3,NH,hs) -> q, k, v (B,NH,T,hs)
template <class D>
__global__ void split_heads(D* q, D* k, D* v, const D* qkv, i64 B, i64 T, i64 NH, i64 hs) {
  const i64 C = NH * hs;
  for (i64 i = grid_index(); i < B * NH * T * hs; i += grid_stride()) {
    const i64 h_ = i % hs, t = (i / hs) % T, h = (i / (hs * T)) % NH, b = i / (hs * T * NH);
    const D* row = qkv + (b * T + t) * 3 * C + h * hs + h_;
    q[i] = row[0];
    k[i] = row[C];
    v[i] = row[2 * C];
  }
}

// inp (B,T,NH,hs) with rows `inp_row_stride` apart -> out (B,NH,T,hs)
template <class D>
__global__ void split_one(D* out, const D* inp, i64 B, i64 T, i64 NH, i64 hs, i64 inp_row_stride) {
  for (i64 i = grid_index(); i < B * NH * T * hs; i += grid_stride()) {
    const i64 h_ = i % hs, t = (i / hs) % T, h = (i / (hs * T)) % NH, b = i / (hs * T * NH);
    out[i] = inp[(b * T + t) * inp_row_stride + h * hs + h_];
  }
}

// x (B,NH,T,hs) -> out (B,T,NH,hs): overwritten, or added to (three of them into dqkv).
template <class D>
__global__ void merge_heads(D* out, const D* x, i64 B, i64 T, i64 NH, i64 hs, i64 out_row_stride) {
  for (i64 i = grid_index(); i < B * NH * T * hs; i += grid_stride()) {
    const i64 h_ = i % hs, t = (i / hs) % T, h = (i / (hs * T)) % NH, b = i / (hs * T * NH);
    out[(b * T + t) * out_row_stride + h * hs + h_] = x[i];
  }
}
template <class D>
__global__ void add_merged_heads(D* dqkv, const D* dq, const D* dk, const D* dv, i64 B, i64 T, i64 NH, i64 hs) {
  const i64 C = NH * hs;
  for (i64 i = grid_index(); i < B * NH * T * hs; i += grid_stride()) {
    const i64 h_ = i % hs, t = (i / hs) % T, h = (i / (hs * T)) % NH, b = i / (hs * T * NH);
    D* row = dqkv + (b * T + t) * 3 * C + h * hs + h_;
    row[0] = narrow<D>(widen(row[0]) + widen(dq[i]));
    row[C] = narrow<D>(widen(row[C]) + widen(dk[i]));
    row[2 * C] = narrow<D>(widen(row[2 * C]) + widen(dv[i]));
  }
}

// One row (b, h, t) of att (B,NH,T,T) holding scale·q·k: causal softmax over t2 <= t in place
// (float math), zeros above the diagonal.
template <class D>
__global__ void causal_softmax_rows(D* att, i64 T) {
  const i64 row = blockIdx.x;
  const i64 t = row % T;
  D* a = att + row * T;
  float local_max = -INFINITY;
  for (i64 t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) local_max = fmaxf(local_max, widen(a[t2]));
  const float max_score = block_max(local_max);
  float local_sum = 0.0f;
  for (i64 t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) local_sum += expf(widen(a[t2]) - max_score);
  const float inverse = 1.0f / block_sum(local_sum);
  for (i64 t2 = threadIdx.x; t2 < T; t2 += blockDim.x)
    a[t2] = narrow<D>(t2 <= t ? expf(widen(a[t2]) - max_score) * inverse : 0.0f);
}

// One row: datt = dy·vᵀ becomes dpre = att (datt - Σ att datt) scale in place, zero above the
// diagonal.
template <class D>
__global__ void causal_softmax_backward_rows(D* datt, const D* att, i64 T, float scale) {
  const i64 row = blockIdx.x;
  const i64 t = row % T;
  D* d = datt + row * T;
  const D* a = att + row * T;
  float local = 0.0f;
  for (i64 t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) local += widen(a[t2]) * widen(d[t2]);
  const float weighted_sum = block_sum(local);
  for (i64 t2 = threadIdx.x; t2 < T; t2 += blockDim.x)
    d[t2] = narrow<D>(t2 <= t ? widen(a[t2]) * (widen(d[t2]) - weighted_sum) * scale : 0.0f);
}

// Column-major C (m,n) = alpha op(A) op(B) + beta C for `batch` matrices, 16-bit storage, fp32
// accumulation.
template <class S>
void batched_gemm(CudaContext& ctx, cublasOperation_t op_a, cublasOperation_t op_b, i64 m, i64 n, i64 k,
                  float alpha, const void* a, i64 lda, i64 stride_a, const void* b, i64 ldb, i64 stride_b,
                  float beta, void* c, i64 ldc, i64 stride_c, i64 batch) {
  const cudaDataType_t type = DeviceStorage<S>::cuda_type;
  SB_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(ctx.cublas(), op_a, op_b, m, n, k, &alpha, a, type, lda, stride_a,
                                                b, type, ldb, stride_b, &beta, c, type, ldc, stride_c, batch,
                                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

i64 padded(i64 count) { return (count + 127) / 128 * 128; }  // keeps each scratch tensor 256-byte aligned

}  // namespace

// Per head (b,h), column-major views of row-major tensors: q, k, v, y (T,hs) are (hs,T), ld hs;
// att (T,T) is attᵀ, ld T.   att = scale q kᵀ;  softmax;  y = att v
template <class S>
void attention_forward(S* out, S* att, const S* qkv, i64 B, i64 T, i64 C, i64 NH) {
  SB_CHECK(NH > 0 && C % NH == 0, "attention: C={} is not a multiple of NH={}", C, NH);
  if (B * T == 0) return;
  using D = Device<S>;
  CudaContext& ctx = default_context();
  const i64 hs = C / NH, BTC = padded(B * T * C), heads = B * NH, TT = T * T, Ths = T * hs;
  const float scale = 1.0f / sqrtf(static_cast<float>(hs));
  D* q = static_cast<D*>(ctx.scratch(static_cast<std::size_t>(4 * BTC) * sizeof(D)));
  D* k = q + BTC;
  D* v = k + BTC;
  D* y = v + BTC;
  split_heads<<<blocks_for(B * T * C), kThreads, 0, ctx.stream()>>>(q, k, v, device_view(qkv), B, T, NH, hs);
  SB_CUDA_CHECK_LAUNCH();
  batched_gemm<S>(ctx, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, scale, k, hs, Ths, q, hs, Ths, 0.0f, att, T, TT, heads);
  causal_softmax_rows<<<static_cast<unsigned>(heads * T), kRowThreads, 0, ctx.stream()>>>(device_view(att), T);
  SB_CUDA_CHECK_LAUNCH();
  batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, v, hs, Ths, att, T, TT, 0.0f, y, hs, Ths, heads);
  merge_heads<<<blocks_for(B * T * C), kThreads, 0, ctx.stream()>>>(device_view(out), y, B, T, NH, hs, C);
  SB_CUDA_CHECK_LAUNCH();
}

//   datt = dy vᵀ;  dpre = softmax backward (scale folded in);
//   dq = dpre k;  dk = dpreᵀ q;  dv = attᵀ dy;  dqkv += merged (dq, dk, dv)
template <class S>
void attention_backward(S* dqkv, const S* dout, const S* qkv, const S* att, i64 B, i64 T, i64 C, i64 NH) {
  SB_CHECK(NH > 0 && C % NH == 0, "attention: C={} is not a multiple of NH={}", C, NH);
  if (B * T == 0) return;
  using D = Device<S>;
  CudaContext& ctx = default_context();
  const i64 hs = C / NH, BTC = padded(B * T * C), heads = B * NH, TT = T * T, Ths = T * hs;
  const float scale = 1.0f / sqrtf(static_cast<float>(hs));
  D* q = static_cast<D*>(ctx.scratch(static_cast<std::size_t>(7 * BTC + padded(heads * TT)) * sizeof(D)));
  D* k = q + BTC;
  D* v = k + BTC;
  D* dy = v + BTC;
  D* dq = dy + BTC;
  D* dk = dq + BTC;
  D* dv = dk + BTC;
  D* dpre = dv + BTC;
  split_heads<<<blocks_for(B * T * C), kThreads, 0, ctx.stream()>>>(q, k, v, device_view(qkv), B, T, NH, hs);
  SB_CUDA_CHECK_LAUNCH();
  split_one<<<blocks_for(B * T * C), kThreads, 0, ctx.stream()>>>(dy, device_view(dout), B, T, NH, hs, C);
  SB_CUDA_CHECK_LAUNCH();
  batched_gemm<S>(ctx, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, 1.0f, v, hs, Ths, dy, hs, Ths, 0.0f, dpre, T, TT, heads);
  causal_softmax_backward_rows<<<static_cast<unsigned>(heads * T), kRowThreads, 0, ctx.stream()>>>(
      dpre, device_view(att), T, scale);
  SB_CUDA_CHECK_LAUNCH();
  batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, k, hs, Ths, dpre, T, TT, 0.0f, dq, hs, Ths, heads);
  batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, q, hs, Ths, dpre, T, TT, 0.0f, dk, hs, Ths, heads);
  batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, dy, hs, Ths, att, T, TT, 0.0f, dv, hs, Ths, heads);
  add_merged_heads<<<blocks_for(B * T * C), kThreads, 0, ctx.stream()>>>(device_view(dqkv), dq, dk, dv, B, T, NH,
                                                                          hs);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_INSTANTIATE(S)                                                                         \
  template void attention_forward<S>(S*, S*, const S*, i64, i64, i64, i64);                      \
  template void attention_backward<S>(S*, const S*, const S*, const S*, i64, i64, i64, i64);
SB_INSTANTIATE(bf16)
SB_INSTANTIATE(fp16)
#undef SB_INSTANTIATE

}  // namespace sb::kernels::cuda::native
