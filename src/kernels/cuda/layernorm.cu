// SPDX-License-Identifier: Apache-2.0
// CUDA LayerNorm over the last dimension: one block per row (two passes, as the reference),
// weight and bias gradients as deterministic column sums (storage_column_sums.cuh: slices of
// rows over the whole GPU, added in slice order; one thread per column over all rows left
// 12 blocks busy at C=768: the whole backward moved 52 GB/s on an H200). Leaves out the
// fused single-pass and vectorised variants.
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/storage_column_sums.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

constexpr float kLayernormEps = 1e-5f;

__global__ void layernorm_forward_rows(float* out, float* mean, float* rstd, const float* inp,
                                       const float* weight, const float* bias, i64 C) {
  const i64 n = blockIdx.x;
  const float* x = inp + n * C;
  float sum = 0.0f;
  for (i64 c = threadIdx.x; c < C; c += blockDim.x) sum += x[c];
  const float m = block_sum(sum) / static_cast<float>(C);
  float sum_sq = 0.0f;
  for (i64 c = threadIdx.x; c < C; c += blockDim.x) sum_sq += (x[c] - m) * (x[c] - m);
  const float variance = block_sum(sum_sq) / static_cast<float>(C);
  const float s = 1.0f / sqrtf(variance + kLayernormEps);
  float* y = out + n * C;
  for (i64 c = threadIdx.x; c < C; c += blockDim.x) y[c] = (x[c] - m) * s * weight[c] + bias[c];
  if (threadIdx.x == 0) {
    mean[n] = m;
    rstd[n] = s;
  }
}

// dx = rstd (dnorm - mean(dnorm) - norm mean(dnorm norm)), dnorm = dout weight.
__global__ void layernorm_backward_rows(float* dinp, const float* dout, const float* inp,
                                        const float* weight, const float* mean, const float* rstd,
                                        i64 C) {
  const i64 n = blockIdx.x;
  const float* x = inp + n * C;
  const float* dy = dout + n * C;
  const float m = mean[n], s = rstd[n];
  float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
  for (i64 c = threadIdx.x; c < C; c += blockDim.x) {
    const float dnorm = dy[c] * weight[c];
    dnorm_sum += dnorm;
    dnorm_norm_sum += dnorm * ((x[c] - m) * s);
  }
  const float dnorm_mean = block_sum(dnorm_sum) / static_cast<float>(C);
  const float dnorm_norm_mean = block_sum(dnorm_norm_sum) / static_cast<float>(C);
  float* dx = dinp + n * C;
  for (i64 c = threadIdx.x; c < C; c += blockDim.x) {
    const float norm = (x[c] - m) * s;
    dx[c] += (dy[c] * weight[c] - dnorm_mean - norm * dnorm_norm_mean) * s;
  }
}

}  // namespace

SB_DECLARE_LAYERNORM_FORWARD(float, float) {
  if (N == 0) return;
  CudaContext& ctx = default_context();
  layernorm_forward_rows<<<static_cast<unsigned>(N), kRowThreads, 0, ctx.stream()>>>(
      out, mean, rstd, inp, weight, bias, C);
  SB_CUDA_CHECK_LAUNCH();
}

SB_DECLARE_LAYERNORM_BACKWARD(float, float) {
  if (N == 0) return;
  CudaContext& ctx = default_context();
  layernorm_backward_rows<<<static_cast<unsigned>(N), kRowThreads, 0, ctx.stream()>>>(
      dinp, dout, inp, weight, mean, rstd, C);
  SB_CUDA_CHECK_LAUNCH();
  native::accumulate_column_sums(ctx, dbias, dweight, dout, inp, mean, rstd, N, C);
}

}  // namespace sb::kernels::cuda
