// SPDX-License-Identifier: Apache-2.0
// Native 16-bit causal attention, llm.c's layout: q, k, v permuted out of qkv (B,T,3,NH,hs)
// into (B,NH,T,hs) so that each product is cublasGemmStridedBatchedEx over all B·NH heads,
// 16-bit operands on tensor cores, fp32 accumulation (CUBLAS_COMPUTE_32F), one call per block
// of query rows so that the blocks above the causal diagonal are never computed. The scores and
// att (B,NH,T,T) live in S — no T×T tensor in fp32 — with the causal softmax and its backward in
// float per row. Scratch (the context's): the permuted q, k, v and the head-major output or
// dout, in backward dq, dk, dv in fp32 and the score gradients (B,NH,T,T) in S. Leaves out
// flash-style tiling (att is kept, as the kernel interface asks) and the masked triangles
// inside the diagonal blocks.
#include <algorithm>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/kernels.hpp"
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

// dqkv (B,T,3,NH,hs) += dq, dk, dv (B,NH,T,hs) (fp32), rounded once
template <int W, class D>
__global__ void add_merged_heads(D* dqkv, const float* dq, const float* dk, const float* dv, i64 B, i64 T, i64 NH,
                                 i64 hs) {
  const i64 C = NH * hs, packs = hs / W;
  for (i64 i = grid_index(); i < B * NH * T * packs; i += grid_stride()) {
    const HeadIndex x(i, T, NH, packs);
    D* row = dqkv + (x.b * T + x.t) * 3 * C + x.h * hs + x.j * W;
    const float* parts[3] = {dq + i * W, dk + i * W, dv + i * W};
#pragma unroll
    for (int part = 0; part < 3; ++part) {
      Pack<D, W> sum = load_pack<W>(row + part * C);
#pragma unroll
      for (int k = 0; k < W; ++k) sum.v[k] = narrow<D>(widen(sum.v[k]) + parts[part][k]);
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
// diagonal up to the end of the row's query block (keys the blocked products read; the rest of
// the row is never read, so it is not written).
template <int W, class D>
__global__ void causal_softmax_backward_rows(D* datt, const D* att, i64 T, i64 block_rows, float scale) {
  const i64 row = blockIdx.x;
  const i64 t = row % T, live = t / W + 1;
  const i64 block_end = std::min(T, (t / block_rows + 1) * block_rows);
  const i64 packs = (block_end + W - 1) / W;
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

// Column-major C (m,n) = alpha op(A) op(B) + beta C for `batch` matrices: A and B in S, C in S
// or fp32 (c_float), fp32 accumulation.
template <class S>
void batched_gemm(CudaContext& ctx, cublasOperation_t op_a, cublasOperation_t op_b, i64 m, i64 n, i64 k,
                  float alpha, const void* a, i64 lda, i64 stride_a, const void* b, i64 ldb, i64 stride_b,
                  float beta, void* c, i64 ldc, i64 stride_c, i64 batch, bool c_float = false) {
  const cudaDataType_t type = DeviceStorage<S>::cuda_type;
  SB_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(ctx.cublas(), op_a, op_b, m, n, k, &alpha, a, type, lda, stride_a,
                                                b, type, ldb, stride_b, &beta, c, c_float ? CUDA_R_32F : type, ldc,
                                                stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

i64 padded(i64 count) { return (count + 127) / 128 * 128; }  // keeps each scratch tensor 256-byte aligned

// Causality by blocks of query rows: rows [begin, end) attend keys [0, end) only, so the
// products skip the blocks above the diagonal (att's zeros there come from the softmax, which
// writes whole rows). With n blocks the T×T products touch (n+1)/2n of the matrix.
struct QueryBlock {
  i64 begin, end;
};
std::vector<QueryBlock> query_blocks(i64 T) {
  const i64 count = std::min<i64>(T, T >= 512 ? 8 : 4);
  const i64 size = (T + count - 1) / count;
  std::vector<QueryBlock> blocks;
  for (i64 begin = 0; begin < T; begin += size) blocks.push_back({begin, std::min(T, begin + size)});
  return blocks;
}

}  // namespace

// Per head (b,h), column-major views of row-major tensors: q, k, v, y (T,hs) are (hs,T), ld hs;
// att (T,T) is attᵀ, ld T. Per query block [r0, r1) and its keys [0, r1):
//   att[r0:r1, :r1] = scale q[r0:r1] k[:r1]ᵀ;  softmax (every row);  y[r0:r1] = att[r0:r1, :r1] v[:r1]
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
  D* a = device_view(att);
  const unsigned rows = static_cast<unsigned>(heads * T);
  with_pack_width(hs, {qkv, q}, [&](auto W) {
    split_heads<W()><<<blocks_for(B * T * C / W()), kThreads, 0, ctx.stream()>>>(q, k, v, device_view(qkv), B, T,
                                                                                NH, hs);
  });
  SB_CUDA_CHECK_LAUNCH();
  const std::vector<QueryBlock> blocks = query_blocks(T);
  for (const auto [r0, r1] : blocks)
    batched_gemm<S>(ctx, CUBLAS_OP_T, CUBLAS_OP_N, r1, r1 - r0, hs, scale, k, hs, Ths, q + r0 * hs, hs, Ths, 0.0f,
                    a + r0 * T, T, TT, heads);
  with_pack_width(T, {att}, [&](auto W) {
    causal_softmax_rows<W()><<<rows, kRowThreads, 0, ctx.stream()>>>(a, T);
  });
  SB_CUDA_CHECK_LAUNCH();
  for (const auto [r0, r1] : blocks)
    batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_N, hs, r1 - r0, r1, 1.0f, v, hs, Ths, a + r0 * T, T, TT, 0.0f,
                    y + r0 * hs, hs, Ths, heads);
  with_pack_width(hs, {out, y}, [&](auto W) {
    merge_heads<W()><<<blocks_for(B * T * C / W()), kThreads, 0, ctx.stream()>>>(device_view(out), y, B, T, NH, hs);
  });
  SB_CUDA_CHECK_LAUNCH();
}

// Per query block [r0, r1):  datt[r0:r1, :r1] = dy[r0:r1] v[:r1]ᵀ;  then for every row
// dpre = softmax backward (scale folded in; zero above the diagonal);  then
//   dq[r0:r1] = dpre[r0:r1, :r1] k[:r1];  dk[:r1] += dpre[r0:r1, :r1]ᵀ q[r0:r1];
//   dv[:r1] += att[r0:r1, :r1]ᵀ dy[r0:r1]
// dq, dk, dv in fp32 (dk and dv sum over blocks, the last block — every key — first, with
// beta = 0); dqkv += their merge, rounded once.
template <class S>
void attention_backward(S* dqkv, const S* dout, const S* qkv, const S* att, i64 B, i64 T, i64 C, i64 NH) {
  SB_CHECK(NH > 0 && C % NH == 0, "attention: C={} is not a multiple of NH={}", C, NH);
  if (B * T == 0) return;
  using D = Device<S>;
  CudaContext& ctx = default_context();
  const i64 hs = C / NH, BTC = padded(B * T * C), heads = B * NH, TT = T * T, Ths = T * hs;
  const float scale = 1.0f / sqrtf(static_cast<float>(hs));
  // 4 tensors (B,NH,T,hs) in S, 3 in fp32 (2 S-sized halves each), the score gradients in S
  D* q = static_cast<D*>(ctx.scratch(static_cast<std::size_t>(10 * BTC + padded(heads * TT)) * sizeof(D)));
  D* k = q + BTC;
  D* v = k + BTC;
  D* dy = v + BTC;
  auto* dq = reinterpret_cast<float*>(dy + BTC);
  float* dk = dq + BTC;
  float* dv = dk + BTC;
  D* dpre = reinterpret_cast<D*>(dv + BTC);
  const D* a = device_view(att);
  const unsigned rows = static_cast<unsigned>(heads * T);
  with_pack_width(hs, {qkv, dout, q}, [&](auto W) {
    split_heads<W()><<<blocks_for(B * T * C / W()), kThreads, 0, ctx.stream()>>>(q, k, v, device_view(qkv), B, T,
                                                                                NH, hs);
    SB_CUDA_CHECK_LAUNCH();
    split_one<W()><<<blocks_for(B * T * C / W()), kThreads, 0, ctx.stream()>>>(dy, device_view(dout), B, T, NH, hs,
                                                                              C);
  });
  SB_CUDA_CHECK_LAUNCH();
  const std::vector<QueryBlock> blocks = query_blocks(T);
  for (const auto [r0, r1] : blocks)
    batched_gemm<S>(ctx, CUBLAS_OP_T, CUBLAS_OP_N, r1, r1 - r0, hs, 1.0f, v, hs, Ths, dy + r0 * hs, hs, Ths, 0.0f,
                    dpre + r0 * T, T, TT, heads);
  with_pack_width(T, {att, dpre}, [&](auto W) {
    causal_softmax_backward_rows<W()><<<rows, kRowThreads, 0, ctx.stream()>>>(dpre, a, T, blocks[0].end, scale);
  });
  SB_CUDA_CHECK_LAUNCH();
  for (auto block = blocks.rbegin(); block != blocks.rend(); ++block) {
    const auto [r0, r1] = *block;
    const float beta = block == blocks.rbegin() ? 0.0f : 1.0f;
    batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_N, hs, r1 - r0, r1, 1.0f, k, hs, Ths, dpre + r0 * T, T, TT, 0.0f,
                    dq + r0 * hs, hs, Ths, heads, true);
    batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_T, hs, r1, r1 - r0, 1.0f, q + r0 * hs, hs, Ths, dpre + r0 * T, T, TT,
                    beta, dk, hs, Ths, heads, true);
    batched_gemm<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_T, hs, r1, r1 - r0, 1.0f, dy + r0 * hs, hs, Ths, a + r0 * T, T, TT,
                    beta, dv, hs, Ths, heads, true);
  }
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
