// SPDX-License-Identifier: Apache-2.0
// CUDA BatchNorm2d (PyTorch semantics): one block per channel, batch statistics summed in
// double as the reference; eval mode element-wise. Leaves out Welford, multi-block channels
// (needed for very large N·HW) and the synchronised (cross-rank) variant.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

__global__ void batchnorm2d_forward_train_channels(float* out, float* mean, float* rstd,
                                                   float* running_mean, float* running_var,
                                                   const float* inp, const float* weight,
                                                   const float* bias, i64 N, i64 C, i64 HW,
                                                   float keep, float take, float eps) {
  const i64 c = blockIdx.x, M = N * HW;
  auto at = [=](i64 j) { return ((j / HW) * C + c) * HW + j % HW; };
  double sum = 0.0;
  for (i64 j = threadIdx.x; j < M; j += blockDim.x) sum += inp[at(j)];
  const float m = static_cast<float>(block_sum(sum) / static_cast<double>(M));
  double sum_sq = 0.0;
  for (i64 j = threadIdx.x; j < M; j += blockDim.x) {
    const double centred = inp[at(j)] - m;
    sum_sq += centred * centred;
  }
  sum_sq = block_sum(sum_sq);
  const float biased_var = static_cast<float>(sum_sq / static_cast<double>(M));
  const float s = 1.0f / sqrtf(biased_var + eps);
  for (i64 j = threadIdx.x; j < M; j += blockDim.x) {
    const i64 index = at(j);
    out[index] = (inp[index] - m) * s * weight[c] + bias[c];
  }
  if (threadIdx.x == 0) {
    mean[c] = m;
    rstd[c] = s;
    running_mean[c] = keep * running_mean[c] + take * m;
    const float unbiased_var = static_cast<float>(sum_sq / static_cast<double>(M - 1));
    running_var[c] = keep * running_var[c] + take * unbiased_var;
  }
}

__global__ void batchnorm2d_backward_channels(float* dinp, float* dweight, float* dbias,
                                              const float* dout, const float* inp,
                                              const float* weight, const float* mean,
                                              const float* rstd, i64 N, i64 C, i64 HW) {
  const i64 c = blockIdx.x, M = N * HW;
  auto at = [=](i64 j) { return ((j / HW) * C + c) * HW + j % HW; };
  double dout_sum = 0.0, dout_norm_sum = 0.0;
  for (i64 j = threadIdx.x; j < M; j += blockDim.x) {
    const i64 index = at(j);
    dout_sum += dout[index];
    dout_norm_sum += static_cast<double>(dout[index]) * ((inp[index] - mean[c]) * rstd[c]);
  }
  dout_sum = block_sum(dout_sum);
  dout_norm_sum = block_sum(dout_norm_sum);
  const float dnorm_mean = static_cast<float>(weight[c] * dout_sum / static_cast<double>(M));
  const float dnorm_norm_mean = static_cast<float>(weight[c] * dout_norm_sum / static_cast<double>(M));
  for (i64 j = threadIdx.x; j < M; j += blockDim.x) {
    const i64 index = at(j);
    const float norm = (inp[index] - mean[c]) * rstd[c];
    dinp[index] += (dout[index] * weight[c] - dnorm_mean - norm * dnorm_norm_mean) * rstd[c];
  }
  if (threadIdx.x == 0) {
    dweight[c] += static_cast<float>(dout_norm_sum);
    dbias[c] += static_cast<float>(dout_sum);
  }
}

}  // namespace

SB_DECLARE_BATCHNORM2D_FORWARD_TRAIN(float, float) {
  SB_CHECK(N * HW > 1, "batchnorm2d_forward_train: needs more than one value per channel, got "
           "N={} HW={}", N, HW);
  if (C == 0) return;
  CudaContext& ctx = default_context();
  batchnorm2d_forward_train_channels<<<static_cast<unsigned>(C), kThreads, 0, ctx.stream()>>>(
      out, mean, rstd, running_mean, running_var, inp, weight, bias, N, C, HW,
      static_cast<float>(1.0 - momentum), static_cast<float>(momentum), static_cast<float>(eps));
  SB_CUDA_CHECK_LAUNCH();
}

SB_DECLARE_BATCHNORM2D_FORWARD_EVAL(float, float) {
  const float epsilon = static_cast<float>(eps);
  for_each_index(N * C * HW, [=] __device__(i64 index) {
    const i64 c = (index / HW) % C;
    const float s = 1.0f / sqrtf(running_var[c] + epsilon);
    out[index] = (inp[index] - running_mean[c]) * s * weight[c] + bias[c];
  });
}

SB_DECLARE_BATCHNORM2D_BACKWARD(float, float) {
  if (C == 0 || N * HW == 0) return;
  CudaContext& ctx = default_context();
  batchnorm2d_backward_channels<<<static_cast<unsigned>(C), kThreads, 0, ctx.stream()>>>(
      dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, HW);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::kernels::cuda
