// SPDX-License-Identifier: Apache-2.0
// BatchNorm2d with Kokkos over channels: each task owns one channel's reductions over N·HW
// values (vectorised per row, rows summed in double). Leaves out Welford and fusion with ReLU.
#include <cmath>

#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

namespace {

SB_CPU_VECTOR_CLONES
float row_sum(const float* x, i64 n) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (i64 i = 0; i < n; ++i) sum += x[i];
  return sum;
}

SB_CPU_VECTOR_CLONES
float row_centred_sum_of_squares(const float* x, float m, i64 n) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (i64 i = 0; i < n; ++i) sum += (x[i] - m) * (x[i] - m);
  return sum;
}

// sum(dy) and sum(dy (x - m)) of one row.
SB_CPU_VECTOR_CLONES
void row_gradient_sums(const float* dy, const float* x, float m, i64 n, float& dy_sum,
                       float& dy_centred_sum) {
  float a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
  for (i64 i = 0; i < n; ++i) {
    a += dy[i];
    b += dy[i] * (x[i] - m);
  }
  dy_sum = a;
  dy_centred_sum = b;
}

// y = (x - shift) scale + bias: training (shift = batch mean, scale = rstd weight) and eval.
SB_CPU_VECTOR_CLONES
void normalise_row(float* y, const float* x, float shift, float scale, float bias, i64 n) {
  for (i64 i = 0; i < n; ++i) y[i] = (x[i] - shift) * scale + bias;
}

// dx += (dy weight - dnorm_mean - (x - m) rstd dnorm_norm_mean) rstd.
SB_CPU_VECTOR_CLONES
void backward_row(float* dx, const float* dy, const float* x, float m, float s, float weight,
                  float dnorm_mean, float dnorm_norm_mean, i64 n) {
  for (i64 i = 0; i < n; ++i)
    dx[i] += (dy[i] * weight - dnorm_mean - (x[i] - m) * s * dnorm_norm_mean) * s;
}

}  // namespace

// Per channel: mean, then the centred sum of squares (two passes, as the reference), then the
// output. Running statistics are blended in double and rounded once.
SB_DECLARE_BATCHNORM2D_FORWARD_TRAIN(float, float) {
  const i64 M = N * HW;
  SB_CHECK(M > 1, "batchnorm2d_forward_train: needs more than one value per channel, got N={} "
           "HW={}", N, HW);
  parallel_for_each("sb::batchnorm2d_forward_train", C, [=](i64 c) {
    double sum = 0;
    for (i64 n = 0; n < N; ++n) sum += row_sum(inp + (n * C + c) * HW, HW);
    const float m = static_cast<float>(sum / static_cast<double>(M));
    double sum_sq = 0;
    for (i64 n = 0; n < N; ++n)
      sum_sq += row_centred_sum_of_squares(inp + (n * C + c) * HW, m, HW);
    const float s = 1.0f / std::sqrt(static_cast<float>(sum_sq / static_cast<double>(M)) +
                                     static_cast<float>(eps));
    for (i64 n = 0; n < N; ++n) {
      const i64 row = (n * C + c) * HW;
      normalise_row(out + row, inp + row, m, s * weight[c], bias[c], HW);
    }
    mean[c] = m;
    rstd[c] = s;
    running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * m);
    running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] +
                                        momentum * (sum_sq / static_cast<double>(M - 1)));
  });
}

SB_DECLARE_BATCHNORM2D_FORWARD_EVAL(float, float) {
  parallel_for_each("sb::batchnorm2d_forward_eval", N * C, [=](i64 nc) {
    const i64 c = nc % C;
    const float scale = weight[c] / std::sqrt(running_var[c] + static_cast<float>(eps));
    normalise_row(out + nc * HW, inp + nc * HW, running_mean[c], scale, bias[c], HW);
  });
}

// Per channel: sum(dy) and sum(dy norm) over N·HW, then dinp row by row; dweight and dbias
// of a channel are written by its task alone.
SB_DECLARE_BATCHNORM2D_BACKWARD(float, float) {
  const double M = static_cast<double>(N * HW);
  parallel_for_each("sb::batchnorm2d_backward", C, [=](i64 c) {
    const float m = mean[c], s = rstd[c];
    double dout_sum = 0, dout_centred_sum = 0;
    for (i64 n = 0; n < N; ++n) {
      const i64 row = (n * C + c) * HW;
      float a = 0, b = 0;
      row_gradient_sums(dout + row, inp + row, m, HW, a, b);
      dout_sum += a;
      dout_centred_sum += b;
    }
    const double dout_norm_sum = dout_centred_sum * s;
    const float dnorm_mean = static_cast<float>(weight[c] * dout_sum / M);
    const float dnorm_norm_mean = static_cast<float>(weight[c] * dout_norm_sum / M);
    for (i64 n = 0; n < N; ++n) {
      const i64 row = (n * C + c) * HW;
      backward_row(dinp + row, dout + row, inp + row, m, s, weight[c], dnorm_mean, dnorm_norm_mean,
                   HW);
    }
    dweight[c] += static_cast<float>(dout_norm_sum);
    dbias[c] += static_cast<float>(dout_sum);
  });
}

}  // namespace sb::kernels::cpu
