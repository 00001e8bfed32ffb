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

// Head (b, h) position t, features [j·W, j·W + W) of an element index over (B,NH,T,hs/W).
struct HeadIndex {
  i64 b, h, t, j;
  __device__ HeadIndex(i64 i, i64 T, i64 NH, i64 packs_per_head)
      : b(i / (packs_per_head * T * NH)),
        h((i / (packs_per_head * T)) % NH),
        t((i / packs_per_head) % T),
        j(i % packs_per_head) {}
};

// qkv (B,T,3,NH,hs) -> q, k, v (B,NH,T,hs), W values at a time
template <int W, class D>
__global__ void split_heads(D* q, D* k, D* v, const D* qkv, i64 B, i64 T, i64 NH, i64 hs) {
  const i64 C = NH * hs, packs = hs / W;
  for (i64 i = grid_index(); i < B * NH * T * packs; i += grid_stride()) {
    const HeadIndex x(i, T, NH, packs);
    const D* row = qkv + (x.b * T + x.t) * 3 * C + x.h * hs + x.j * W;
    store_pack<W>(q + i * W, load_pack<W>(row));
    store_pack<W>(k + i * W, load_pack<W>(row + C));
    store_pack<W>(v + i * W, load_pack<W>(row + 2 * C));
  }
}

// inp (B,T,NH,hs) with rows `inp_row_stride` apart -> out (B,NH,T,hs)
template <int W, class D>
__global__ void split_one(D* out, const D* inp, i64 B, i64 T, i64 NH, i64 hs, i64 inp_row_stride) {
  const i64 packs = hs / W;
  for (i64 i = grid_index(); i < B * NH * T * packs; i += grid_stride()) {
    const HeadIndex x(i, T, NH, packs);
    store_pack<W>(out + i * W, load_pack<W>(inp + (x.b * T + x.t) * inp_row_stride + x.h * hs + x.j * W));
  }
}

// y (B,NH,T,hs) -> out (B,T,NH,hs), overwritten
template <int W, class D>
__global__ void merge_heads(D* out, const D* y, i64 B, i64 T, i64 NH, i64 hs) {
  const i64 packs = hs / W;
  for (i64 i = grid_index(); i < B * NH * T * packs; i += grid_stride()) {
    const HeadIndex x(i, T, NH, packs);
    store_pack<W>(out + (x.b * T + x.t) * NH * hs + x.h * hs + x.j * W, load_pack<W>(y + i * W));
  }
}

// dqkv (B,T,3,NH,hs) += dq, dk, dv (B,NH,T,hs), in float, rounded once
template <int W, class D>
__global__ void add_merged_heads(D* dqkv, const D* dq, const D* dk, const D* dv, i64 B, i64 T, i64 NH, i64 hs) {
  const i64 C = NH * hs, packs = hs / W;
  for (i64 i = grid_index(); i < B * NH * T * packs; i += grid_stride()) {
    const HeadIndex x(i, T, NH, packs);
    D* row = dqkv + (x.b * T + x.t) * 3 * C + x.h * hs + x.j * W;
    const D* parts[3] = {dq + i * W, dk + i * W, dv + i * W};
#pragma unroll
    for (int part = 0; part < 3; ++part) {
      Pack<D, W> sum = load_pack<W>(row + part * C);
      const Pack<D, W> add = load_pack<W>(parts[part]);
#pragma unroll
      for (int k = 0; k < W; ++k) sum.v[k] = narrow<D>(widen(sum.v[k]) + widen(add.v[k]));
      store_pack<W>(row + part * C, sum);
    }
  }
}

// One row (b, h, t) of att (B,NH,T,T) holding scale·q·k: causal softmax over t2 <= t in place
// (float math), zeros above the diagonal. Packs past the diagonal are only written.
template <int W, class D>
__global__ void causal_softmax_rows(D* att, i64 T) {
  const i64 row = blockIdx.x;
  const i64 t = row % T, packs = T / W, live = t / W + 1;  // packs holding some t2 <= t
  D* a = att + row * T;
  float local_max = -INFINITY;
  for (i64 p = threadIdx.x; p < live; p += blockDim.x) {
    const Pack<D, W> x = load_pack<W>(a + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k)
      if (p * W + k <= t) local_max = fmaxf(local_max, widen(x.v[k]));
  }
  const float max_score = block_max(local_max);
  float local_sum = 0.0f;
  for (i64 p = threadIdx.x; p < live; p += blockDim.x) {
    const Pack<D, W> x = load_pack<W>(a + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k)
      if (p * W + k <= t) local_sum += expf(widen(x.v[k]) - max_score);
  }
  const float inverse = 1.0f / block_sum(local_sum);
  for (i64 p = threadIdx.x; p < packs; p += blockDim.x) {
    Pack<D, W> x;
    if (p < live) x = load_pack<W>(a + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k)
      x.v[k] = narrow<D>(p * W + k <= t ? expf(widen(x.v[k]) - max_score) * inverse : 0.0f);
    store_pack<W>(a + p * W, x);
  }
}

// One row: datt = dy·vᵀ becomes dpre = att (datt - Σ att datt) scale in place, zero above the
// diagonal.
template <int W, class D>
__global__ void causal_softmax_backward_rows(D* datt, const D* att, i64 T, float scale) {
  const i64 row = blockIdx.x;
  const i64 t = row % T, packs = T / W, live = t / W + 1;
  D* d = datt + row * T;
  const D* a = att + row * T;
  float local = 0.0f;
  for (i64 p = threadIdx.x; p < live; p += blockDim.x) {
    const Pack<D, W> x = load_pack<W>(a + p * W), g = load_pack<W>(d + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k)
      if (p * W + k <= t) local += widen(x.v[k]) * widen(g.v[k]);
  }
  const float weighted_sum = block_sum(local);
  for (i64 p = threadIdx.x; p < packs; p += blockDim.x) {
    Pack<D, W> x, g;
    if (p < live) x = load_pack<W>(a + p * W), g = load_pack<W>(d + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k)
      g.v[k] = narrow<D>(p * W + k <= t ? widen(x.v[k]) * (widen(g.v[k]) - weighted_sum) * scale : 0.0f);
    store_pack<W>(d + p * W, g);
  }
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
  const unsigned rows = static_cast<unsigned>(heads * T);
  with_pack_width(hs, {qkv, q}, [&](auto W) {
    split_heads<W()><<<blocks_for(B * T * C / W()), kThreads, 0, ctx.stream()>>>(q, k, v, device_view(qkv), B, T,
                                                                                NH, hs);
  });
  SB_CUDA_CHECK_LAUNCH();
  batched_gemm<S>(ctx, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, scale, k, hs, Ths, q, hs, Ths, 0.0f, att, T, TT, heads);
  with_pack_width(T, {att}, [&](auto W) {
    causal_softmax_rows<W()><<<rows, kRowThreads, 0, ctx.stream()>>>(device_view(att), T);
  });
  SB_CUDA_CHECK_LAUNCH();
  batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, v, hs, Ths, att, T, TT, 0.0f, y, hs, Ths, heads);
  with_pack_width(hs, {out, y}, [&](auto W) {
    merge_heads<W()><<<blocks_for(B * T * C / W()), kThreads, 0, ctx.stream()>>>(device_view(out), y, B, T, NH, hs);
  });
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
  const unsigned rows = static_cast<unsigned>(heads * T);
  with_pack_width(hs, {qkv, dout, q}, [&](auto W) {
    split_heads<W()><<<blocks_for(B * T * C / W()), kThreads, 0, ctx.stream()>>>(q, k, v, device_view(qkv), B, T,
                                                                                NH, hs);
    SB_CUDA_CHECK_LAUNCH();
    split_one<W()><<<blocks_for(B * T * C / W()), kThreads, 0, ctx.stream()>>>(dy, device_view(dout), B, T, NH, hs,
                                                                              C);
  });
  SB_CUDA_CHECK_LAUNCH();
  batched_gemm<S>(ctx, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, 1.0f, v, hs, Ths, dy, hs, Ths, 0.0f, dpre, T, TT, heads);
  with_pack_width(T, {att, dpre}, [&](auto W) {
    causal_softmax_backward_rows<W()><<<rows, kRowThreads, 0, ctx.stream()>>>(dpre, device_view(att), T, scale);
  });
  SB_CUDA_CHECK_LAUNCH();
  batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, k, hs, Ths, dpre, T, TT, 0.0f, dq, hs, Ths, heads);
  batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, q, hs, Ths, dpre, T, TT, 0.0f, dk, hs, Ths, heads);
  batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, dy, hs, Ths, att, T, TT, 0.0f, dv, hs, Ths, heads);
  with_pack_width(hs, {dqkv, dq}, [&](auto W) {
    add_merged_heads<W()><<<blocks_for(B * T * C / W()), kThreads, 0, ctx.stream()>>>(device_view(dqkv), dq, dk, dv,
                                                                                     B, T, NH, hs);
  });
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_INSTANTIATE(S)                                                                         \
  template void attention_forward<S>(S*, S*, const S*, i64, i64, i64, i64);                      \
  template void attention_backward<S>(S*, const S*, const S*, const S*, i64, i64, i64, i64);
SB_INSTANTIATE(bf16)
SB_INSTANTIATE(fp16)
#undef SB_INSTANTIATE

}  // namespace sb::kernels::cuda::native
