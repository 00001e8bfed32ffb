// SPDX-License-Identifier: Apache-2.0
// Native 16-bit LayerNorm: one block per row, statistics and arithmetic in float on widened
// values (two passes over the row, as the reference; 16-byte accesses where C % 8 == 0), one
// rounding per stored value; weight
// and bias gradients as deterministic fp32 column sums. Leaves out the fused residual +
// LayerNorm kernel and one-warp-per-row variants.
#include "kernels/kernels.hpp"
#include "kernels/cuda/storage_column_sums.cuh"

namespace sb::kernels::cuda::native {

namespace {

constexpr float kLayernormEps = 1e-5f;

template <int W, class D>
__global__ void layernorm_forward_rows(D* out, float* mean, float* rstd, const D* inp, const D* weight,
                                       const D* bias, i64 C) {
  const i64 n = blockIdx.x, packs = C / W;
  const D* x = inp + n * C;
  float sum = 0.0f;
  for (i64 p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<D, W> xv = load_pack<W>(x + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k) sum += widen(xv.v[k]);
  }
  const float m = block_sum(sum) / static_cast<float>(C);
  float sum_sq = 0.0f;
  for (i64 p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<D, W> xv = load_pack<W>(x + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float d = widen(xv.v[k]) - m;
      sum_sq += d * d;
    }
  }
  const float s = 1.0f / sqrtf(block_sum(sum_sq) / static_cast<float>(C) + kLayernormEps);
  D* y = out + n * C;
  for (i64 p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<D, W> xv = load_pack<W>(x + p * W), wv = load_pack<W>(weight + p * W), bv = load_pack<W>(bias + p * W);
    Pack<D, W> yv;
#pragma unroll
    for (int k = 0; k < W; ++k) yv.v[k] = narrow<D>((widen(xv.v[k]) - m) * s * widen(wv.v[k]) + widen(bv.v[k]));
    store_pack<W>(y + p * W, yv);
  }
  if (threadIdx.x == 0) {
    mean[n] = m;
    rstd[n] = s;
  }
}

// dx += rstd (dnorm - mean(dnorm) - norm mean(dnorm norm)), dnorm = dout weight.
template <int W, class D>
__global__ void layernorm_backward_rows(D* dinp, const D* dout, const D* inp, const D* weight, const float* mean,
                                        const float* rstd, i64 C) {
  const i64 n = blockIdx.x, packs = C / W;
  const D* x = inp + n * C;
  const D* dy = dout + n * C;
  const float m = mean[n], s = rstd[n];
  float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
  for (i64 p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<D, W> xv = load_pack<W>(x + p * W), gv = load_pack<W>(dy + p * W), wv = load_pack<W>(weight + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float dnorm = widen(gv.v[k]) * widen(wv.v[k]);
      dnorm_sum += dnorm;
      dnorm_norm_sum += dnorm * ((widen(xv.v[k]) - m) * s);
    }
  }
  const float dnorm_mean = block_sum(dnorm_sum) / static_cast<float>(C);
  const float dnorm_norm_mean = block_sum(dnorm_norm_sum) / static_cast<float>(C);
  D* dx = dinp + n * C;
  for (i64 p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<D, W> xv = load_pack<W>(x + p * W), gv = load_pack<W>(dy + p * W), wv = load_pack<W>(weight + p * W);
    Pack<D, W> dv = load_pack<W>(dx + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float norm = (widen(xv.v[k]) - m) * s;
      dv.v[k] = narrow<D>(widen(dv.v[k]) +
                          (widen(gv.v[k]) * widen(wv.v[k]) - dnorm_mean - norm * dnorm_norm_mean) * s);
    }
    store_pack<W>(dx + p * W, dv);
  }
}

}  // namespace

template <class S>
void layernorm_forward(S* out, float* mean, float* rstd, const S* inp, const S* weight, const S* bias, i64 N,
                       i64 C) {
  if (N == 0) return;
  CudaContext& ctx = default_context();
  with_pack_width(C, {out, inp, weight, bias}, [&](auto W) {
    layernorm_forward_rows<W()><<<static_cast<unsigned>(N), kRowThreads, 0, ctx.stream()>>>(
        device_view(out), mean, rstd, device_view(inp), device_view(weight), device_view(bias), C);
  });
  SB_CUDA_CHECK_LAUNCH();
}

template <class S>
void layernorm_backward(S* dinp, float* dweight, float* dbias, const S* dout, const S* inp, const S* weight,
                        const float* mean, const float* rstd, i64 N, i64 C) {
  if (N == 0) return;
  CudaContext& ctx = default_context();
  with_pack_width(C, {dinp, dout, inp, weight}, [&](auto W) {
    layernorm_backward_rows<W()><<<static_cast<unsigned>(N), kRowThreads, 0, ctx.stream()>>>(
        device_view(dinp), device_view(dout), device_view(inp), device_view(weight), mean, rstd, C);
  });
  SB_CUDA_CHECK_LAUNCH();
  accumulate_column_sums(ctx, dbias, dweight, device_view(dout), device_view(inp), mean, rstd, N, C);
}

#define SB_INSTANTIATE(S)                                                                                 \
  template void layernorm_forward<S>(S*, float*, float*, const S*, const S*, const S*, i64, i64);        \
  template void layernorm_backward<S>(S*, float*, float*, const S*, const S*, const S*, const float*,    \
                                      const float*, i64, i64);
SB_INSTANTIATE(bf16)
SB_INSTANTIATE(fp16)
#undef SB_INSTANTIATE

}  // namespace sb::kernels::cuda::native
