// SPDX-License-Identifier: Apache-2.0
// CUDA BatchNorm2d split at its per-channel reductions (synchronised BatchNorm sums them across
// ranks in between): one block per channel for the sums (in double, as the reference), element-
// wise passes for the rest. Leaves out multi-block channels (very large N·HW) and Welford.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

__global__ void channel_sums(double* sums, const float* inp, i64 N, i64 C, i64 HW) {
  const i64 c = blockIdx.x, M = N * HW;
  double sum = 0.0, sum_sq = 0.0;
  for (i64 j = threadIdx.x; j < M; j += blockDim.x) {
    const double x = inp[((j / HW) * C + c) * HW + j % HW];
    sum += x;
    sum_sq += x * x;
  }
  sum = block_sum(sum);
  sum_sq = block_sum(sum_sq);
  if (threadIdx.x == 0) {
    sums[c] = sum;
    sums[C + c] = sum_sq;
  }
}

__global__ void backward_channel_sums(double* sums, float* dweight, float* dbias, const float* dout,
                                      const float* relu_out, const float* inp, const float* mean,
                                      const float* rstd, i64 N, i64 C, i64 HW) {
  const i64 c = blockIdx.x, M = N * HW;
  double dy_sum = 0.0, dy_norm_sum = 0.0;
  for (i64 j = threadIdx.x; j < M; j += blockDim.x) {
    const i64 index = ((j / HW) * C + c) * HW + j % HW;
    const float dy = relu_out && !(relu_out[index] > 0.0f) ? 0.0f : dout[index];
    dy_sum += dy;
    dy_norm_sum += static_cast<double>(dy) * ((inp[index] - mean[c]) * rstd[c]);
  }
  dy_sum = block_sum(dy_sum);
  dy_norm_sum = block_sum(dy_norm_sum);
  if (threadIdx.x == 0) {
    sums[c] = dy_sum;
    sums[C + c] = dy_norm_sum;
    dweight[c] += static_cast<float>(dy_norm_sum);
    dbias[c] += static_cast<float>(dy_sum);
  }
}

}  // namespace

SB_DECLARE_BATCHNORM2D_CHANNEL_SUMS(float, float) {
  if (C == 0) return;
  CudaContext& ctx = default_context();
  channel_sums<<<static_cast<unsigned>(C), kThreads, 0, ctx.stream()>>>(sums, inp, N, C, HW);
  SB_CUDA_CHECK_LAUNCH();
}

// var = Σx²/count − mean², clamped at 0, in double as the reference.
SB_DECLARE_BATCHNORM2D_STATISTICS(float, float) {
  SB_CHECK(count > 1, "batchnorm2d_statistics: needs more than one value per channel, got {}", count);
  for_each_index(C, [=] __device__(i64 c) {
    const double m = sums[c] / count;
    const double biased_var = fmax(0.0, sums[C + c] / count - m * m);
    mean[c] = static_cast<float>(m);
    rstd[c] = static_cast<float>(1.0 / sqrt(biased_var + eps));
    running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * m);
    running_var[c] =
        static_cast<float>((1.0 - momentum) * running_var[c] + momentum * biased_var * count / (count - 1));
  });
}

SB_DECLARE_BATCHNORM2D_FORWARD_APPLY(float, float) {
  for_each_index(N * C * HW, [=] __device__(i64 index) {
    const i64 c = (index / HW) % C;
    float y = (inp[index] - mean[c]) * rstd[c] * weight[c] + bias[c];
    if (residual) y += residual[index];
    out[index] = relu && y < 0.0f ? 0.0f : y;
  });
}

SB_DECLARE_BATCHNORM2D_BACKWARD_SUMS(float, float) {
  if (C == 0) return;
  CudaContext& ctx = default_context();
  backward_channel_sums<<<static_cast<unsigned>(C), kThreads, 0, ctx.stream()>>>(
      sums, dweight, dbias, dout, relu_out, inp, mean, rstd, N, C, HW);
  SB_CUDA_CHECK_LAUNCH();
}

SB_DECLARE_BATCHNORM2D_BACKWARD_APPLY(float, float) {
  for_each_index(N * C * HW, [=] __device__(i64 index) {
    const i64 c = (index / HW) % C;
    const float dnorm_mean = static_cast<float>(weight[c] * sums[c] / count);
    const float dnorm_norm_mean = static_cast<float>(weight[c] * sums[C + c] / count);
    const float dy = relu_out && !(relu_out[index] > 0.0f) ? 0.0f : dout[index];
    const float norm = (inp[index] - mean[c]) * rstd[c];
    dinp[index] = (dy * weight[c] - dnorm_mean - norm * dnorm_norm_mean) * rstd[c];
  });
}

}  // namespace sb::kernels::cuda
