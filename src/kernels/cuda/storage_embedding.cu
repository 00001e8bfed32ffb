// SPDX-License-Identifier: Apache-2.0
// Native 16-bit token + position embedding. Backward into fp32 without atomics: the tokens are
// sorted stably (CUB radix sort of (token, position) pairs, so equal tokens keep their order),
// and one block per distinct token adds its rows in position order — the reference's order, in
// parallel over tokens. Leaves out llm.c's bucketing by (token, column group) for very
// frequent tokens.
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/kernels.hpp"
#include "kernels/cuda/storage_types.cuh"

namespace sb::kernels::cuda::native {

namespace {

// W values of a row at a time.
template <int W, class D>
__global__ void embedding_forward_kernel(D* out, const std::int32_t* tokens, const D* wte, const D* wpe, i64 B,
                                         i64 T, i64 C) {
  const i64 packs = C / W;
  for (i64 i = grid_index(); i < B * T * packs; i += grid_stride()) {
    const i64 bt = i / packs, c = (i % packs) * W, t = bt % T;
    const Pack<D, W> e = load_pack<W>(wte + static_cast<i64>(tokens[bt]) * C + c), p = load_pack<W>(wpe + t * C + c);
    Pack<D, W> sum;
#pragma unroll
    for (int k = 0; k < W; ++k) sum.v[k] = narrow<D>(widen(e.v[k]) + widen(p.v[k]));
    store_pack<W>(out + bt * C + c, sum);
  }
}

__global__ void fill_positions(std::int32_t* positions, i64 n) {
  for (i64 i = grid_index(); i < n; i += grid_stride()) positions[i] = static_cast<std::int32_t>(i);
}

// Block i of the sorted (token, position) pairs: when it starts a run of one token, it adds
// that token's dout rows, in position order, to its dwte row.
template <class D>
__global__ void embedding_backward_runs(float* dwte, const D* dout, const std::int32_t* sorted_tokens,
                                        const std::int32_t* sorted_positions, i64 BT, i64 C) {
  const i64 first = blockIdx.x;
  const std::int32_t token = sorted_tokens[first];
  if (first > 0 && sorted_tokens[first - 1] == token) return;
  float* row = dwte + static_cast<i64>(token) * C;
  for (i64 c = threadIdx.x; c < C; c += blockDim.x) {
    float sum = row[c];
    for (i64 j = first; j < BT && sorted_tokens[j] == token; ++j)
      sum += widen(dout[static_cast<i64>(sorted_positions[j]) * C + c]);
    row[c] = sum;
  }
}

// dwpe (T,C) += Σ_b dout (B,T,C), one thread per (t, c), batches in order.
template <class D>
__global__ void embedding_backward_wpe(float* dwpe, const D* dout, i64 B, i64 T, i64 C) {
  for (i64 i = grid_index(); i < T * C; i += grid_stride()) {
    float sum = dwpe[i];
    for (i64 b = 0; b < B; ++b) sum += widen(dout[b * T * C + i]);
    dwpe[i] = sum;
  }
}

std::size_t aligned_bytes(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

template <class S>
void embedding_forward(S* out, const std::int32_t* tokens, const S* wte, const S* wpe, i64 B, i64 T, i64 C) {
  if (B * T * C == 0) return;
  CudaContext& ctx = default_context();
  with_pack_width(C, {out, wte, wpe}, [&](auto W) {
    embedding_forward_kernel<W()><<<blocks_for(B * T * C / W()), kThreads, 0, ctx.stream()>>>(
        device_view(out), tokens, device_view(wte), device_view(wpe), B, T, C);
  });
  SB_CUDA_CHECK_LAUNCH();
}

template <class S>
void embedding_backward(float* dwte, float* dwpe, const S* dout, const std::int32_t* tokens, i64 B, i64 T,
                        i64 C) {
  if (B * T * C == 0) return;
  CudaContext& ctx = default_context();
  const i64 BT = B * T;
  SB_CHECK(BT <= INT32_MAX, "embedding_backward: B·T = {} positions exceed int32", BT);
  const int n = static_cast<int>(BT);
  std::size_t sort_bytes = 0;
  SB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const std::int32_t*>(nullptr),
                                                static_cast<std::int32_t*>(nullptr),
                                                static_cast<const std::int32_t*>(nullptr),
                                                static_cast<std::int32_t*>(nullptr), n, 0, 32, ctx.stream()));
  const std::size_t ints = aligned_bytes(static_cast<std::size_t>(BT) * sizeof(std::int32_t));
  auto* base = static_cast<std::uint8_t*>(ctx.scratch(3 * ints + aligned_bytes(sort_bytes)));
  auto* positions = reinterpret_cast<std::int32_t*>(base);
  auto* sorted_tokens = reinterpret_cast<std::int32_t*>(base + ints);
  auto* sorted_positions = reinterpret_cast<std::int32_t*>(base + 2 * ints);
  void* sort_scratch = base + 3 * ints;
  fill_positions<<<blocks_for(BT), kThreads, 0, ctx.stream()>>>(positions, BT);
  SB_CUDA_CHECK_LAUNCH();
  SB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_scratch, sort_bytes, tokens, sorted_tokens, positions,
                                                sorted_positions, n, 0, 32, ctx.stream()));
  embedding_backward_runs<<<static_cast<unsigned>(BT), kRowThreads, 0, ctx.stream()>>>(
      dwte, device_view(dout), sorted_tokens, sorted_positions, BT, C);
  SB_CUDA_CHECK_LAUNCH();
  embedding_backward_wpe<<<blocks_for(T * C), kThreads, 0, ctx.stream()>>>(dwpe, device_view(dout), B, T, C);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_INSTANTIATE(S)                                                                                   \
  template void embedding_forward<S>(S*, const std::int32_t*, const S*, const S*, i64, i64, i64);          \
  template void embedding_backward<S>(float*, float*, const S*, const std::int32_t*, i64, i64, i64);
SB_INSTANTIATE(bf16)
SB_INSTANTIATE(fp16)
#undef SB_INSTANTIATE

}  // namespace sb::kernels::cuda::native
