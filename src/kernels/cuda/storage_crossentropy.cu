// SPDX-License-Identifier: Apache-2.0
// Native 16-bit softmax + cross-entropy: one block per row, max and exponentials in float, the
// row sum in double across threads (as the fp32 kernel: at V = 50304 one float sum drops terms;
// float within a thread's ~200 terms), probabilities rounded once, 16-byte accesses where V % 8 == 0; the backward
// element-wise in float, 8 values at a time. Leaves out the fused classifier that never stores
// probs (the kernel interface keeps them).
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/kernels.hpp"
#include "kernels/cuda/storage_types.cuh"

namespace sb::kernels::cuda::native {

namespace {

// W logits at a time, two passes over the row: an online max and sum of exponentials (each
// thread's sum in float over its share, rescaled when its max grows; the block's in double),
// then the probabilities.
template <int W, class D>
__global__ void crossentropy_forward_rows(float* losses, D* probs, const D* logits, const std::int32_t* targets,
                                          i64 V) {
  const i64 r = blockIdx.x, packs = V / W;
  const D* x = logits + r * V;
  D* p = probs + r * V;
  float thread_max = -INFINITY, thread_sum = 0.0f;  // thread_sum: Σ exp(x - thread_max)
  for (i64 j = threadIdx.x; j < packs; j += blockDim.x) {
    const Pack<D, W> xv = load_pack<W>(x + j * W);
    float pack_max = -INFINITY;
#pragma unroll
    for (int k = 0; k < W; ++k) pack_max = fmaxf(pack_max, widen(xv.v[k]));
    if (pack_max > thread_max) {
      thread_sum *= expf(thread_max - pack_max);
      thread_max = pack_max;
    }
#pragma unroll
    for (int k = 0; k < W; ++k) thread_sum += expf(widen(xv.v[k]) - thread_max);
  }
  const float max_logit = block_max(thread_max);
  const double local_sum = thread_sum > 0.0f ? static_cast<double>(thread_sum * expf(thread_max - max_logit)) : 0.0;
  const double sum = block_sum(local_sum);
  const float inverse = static_cast<float>(1.0 / sum);
  for (i64 j = threadIdx.x; j < packs; j += blockDim.x) {
    const Pack<D, W> xv = load_pack<W>(x + j * W);
    Pack<D, W> pv;
#pragma unroll
    for (int k = 0; k < W; ++k) pv.v[k] = narrow<D>(expf(widen(xv.v[k]) - max_logit) * inverse);
    store_pack<W>(p + j * W, pv);
  }
  if (threadIdx.x == 0) losses[r] = static_cast<float>(log(sum) - (widen(x[targets[r]]) - max_logit));
}

// dlogits += probs dloss, then -= dloss at the target; `vector`: packs of 8 (V % 8 == 0, aligned).
template <class D>
__global__ void crossentropy_backward_kernel(D* dlogits, const D* probs, const std::int32_t* targets,
                                             const float* dlosses, i64 BT, i64 V, bool vector) {
  if (vector) {
    for (i64 p = grid_index(); p < BT * V / 8; p += grid_stride()) {
      const i64 i = 8 * p, r = i / V;
      const float d = dlosses[r];
      const i64 target = targets[r];
      Pack8<D> g = load8(dlogits + i);
      const Pack8<D> q = load8(probs + i);
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        float value = widen(g.v[k]) + widen(q.v[k]) * d;
        if ((i + k) % V == target) value -= d;
        g.v[k] = narrow<D>(value);
      }
      store8(dlogits + i, g);
    }
    return;
  }
  for (i64 i = grid_index(); i < BT * V; i += grid_stride()) {
    const i64 r = i / V;
    const float d = dlosses[r];
    float value = widen(dlogits[i]) + widen(probs[i]) * d;
    if (i % V == targets[r]) value -= d;
    dlogits[i] = narrow<D>(value);
  }
}

}  // namespace

template <class S>
void crossentropy_forward(float* losses, S* probs, const S* logits, const std::int32_t* targets, i64 BT, i64 V) {
  if (BT == 0) return;
  CudaContext& ctx = default_context();
  with_pack_width(V, {probs, logits}, [&](auto W) {
    crossentropy_forward_rows<W()><<<static_cast<unsigned>(BT), kThreads, 0, ctx.stream()>>>(
        losses, device_view(probs), device_view(logits), targets, V);
  });
  SB_CUDA_CHECK_LAUNCH();
}

template <class S>
void crossentropy_backward(S* dlogits, const S* probs, const std::int32_t* targets, const float* dlosses, i64 BT,
                           i64 V) {
  if (BT * V == 0) return;
  CudaContext& ctx = default_context();
  const bool vector = V % 8 == 0 && aligned16(dlogits) && aligned16(probs);
  crossentropy_backward_kernel<<<blocks_for(vector ? BT * V / 8 : BT * V), kThreads, 0, ctx.stream()>>>(
      device_view(dlogits), device_view(probs), targets, dlosses, BT, V, vector);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_INSTANTIATE(S)                                                                                   \
  template void crossentropy_forward<S>(float*, S*, const S*, const std::int32_t*, i64, i64);              \
  template void crossentropy_backward<S>(S*, const S*, const std::int32_t*, const float*, i64, i64);
SB_INSTANTIATE(bf16)
SB_INSTANTIATE(fp16)
#undef SB_INSTANTIATE

}  // namespace sb::kernels::cuda::native
