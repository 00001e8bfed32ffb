// SPDX-License-Identifier: Apache-2.0
// BatchNorm2d split at its per-channel reductions, Kokkos over channels for the sums (rows
// vectorised, added in double in row order: deterministic) and over (image, channel) rows
// for the elementwise passes. The ReLU mask and the residual add are fused into the passes.
// Leaves out Welford (the sums must be all-reducible).
#include <algorithm>
#include <cmath>

#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

namespace {

SB_CPU_VECTOR_CLONES
void row_sum_and_squares(const float* x, i64 n, double& sum, double& sum_sq) {
  double a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
  for (i64 i = 0; i < n; ++i) {
    const double v = x[i];
    a += v;
    b += v * v;
  }
  sum = a;
  sum_sq = b;
}

// y = (x - m)·scale + shift (+ residual), then ReLU.
SB_CPU_VECTOR_CLONES
void apply_row(float* y, const float* x, float m, float scale, float shift,
               const float* residual, bool relu, i64 n) {
  if (residual) {
    if (relu) {
      for (i64 i = 0; i < n; ++i) y[i] = std::max((x[i] - m) * scale + shift + residual[i], 0.0f);
    } else {
      for (i64 i = 0; i < n; ++i) y[i] = (x[i] - m) * scale + shift + residual[i];
    }
  } else if (relu) {
    for (i64 i = 0; i < n; ++i) y[i] = std::max((x[i] - m) * scale + shift, 0.0f);
  } else {
    for (i64 i = 0; i < n; ++i) y[i] = (x[i] - m) * scale + shift;
  }
}

// Σdy and Σdy (x - m) of one row, dy masked by relu_out when given.
SB_CPU_VECTOR_CLONES
void row_gradient_sums(const float* dy, const float* relu_out, const float* x, float m, i64 n,
                       float& dy_sum, float& dy_centred_sum) {
  float a = 0, b = 0;
  if (relu_out) {
#pragma omp simd reduction(+ : a, b)
    for (i64 i = 0; i < n; ++i) {
      const float g = relu_out[i] > 0.0f ? dy[i] : 0.0f;
      a += g;
      b += g * (x[i] - m);
    }
  } else {
#pragma omp simd reduction(+ : a, b)
    for (i64 i = 0; i < n; ++i) {
      a += dy[i];
      b += dy[i] * (x[i] - m);
    }
  }
  dy_sum = a;
  dy_centred_sum = b;
}

// dx = dy·a - (x - m)·b - c, with a = weight·rstd, b = rstd²·dnorm_norm_mean,
// c = rstd·dnorm_mean.
SB_CPU_VECTOR_CLONES
void backward_apply_row(float* dx, const float* dy, const float* relu_out, const float* x,
                        float m, float a, float b, float c, i64 n) {
  if (relu_out) {
    for (i64 i = 0; i < n; ++i)
      dx[i] = (relu_out[i] > 0.0f ? dy[i] : 0.0f) * a - (x[i] - m) * b - c;
  } else {
    for (i64 i = 0; i < n; ++i) dx[i] = dy[i] * a - (x[i] - m) * b - c;
  }
}

}  // namespace

SB_DECLARE_BATCHNORM2D_CHANNEL_SUMS(float, float) {
  parallel_for_each("sb::batchnorm2d_channel_sums", C, [=](i64 c) {
    double sum = 0, sum_sq = 0;
    for (i64 n = 0; n < N; ++n) {
      double a = 0, b = 0;
      row_sum_and_squares(inp + (n * C + c) * HW, HW, a, b);
      sum += a;
      sum_sq += b;
    }
    sums[c] = sum;
    sums[C + c] = sum_sq;
  });
}

// C values: one thread, double, rounded once (as the reference).
SB_DECLARE_BATCHNORM2D_STATISTICS(float, float) {
  SB_CHECK(count > 1, "batchnorm2d_statistics: needs more than one value per channel, got {}",
           count);
  for (i64 c = 0; c < C; ++c) {
    const double m = sums[c] / count;
    const double biased_var = std::max(0.0, sums[C + c] / count - m * m);
    mean[c] = static_cast<float>(m);
    rstd[c] = static_cast<float>(1.0 / std::sqrt(biased_var + eps));
    running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * m);
    running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] +
                                        momentum * biased_var * count / (count - 1));
  }
}

SB_DECLARE_BATCHNORM2D_FORWARD_APPLY(float, float) {
  parallel_for_each("sb::batchnorm2d_forward_apply", N * C, [=](i64 nc) {
    const i64 c = nc % C;
    apply_row(out + nc * HW, inp + nc * HW, mean[c], rstd[c] * weight[c], bias[c],
              residual ? residual + nc * HW : nullptr, relu, HW);
  });
}

SB_DECLARE_BATCHNORM2D_BACKWARD_SUMS(float, float) {
  parallel_for_each("sb::batchnorm2d_backward_sums", C, [=](i64 c) {
    const float m = mean[c];
    double dy_sum = 0, dy_centred_sum = 0;
    for (i64 n = 0; n < N; ++n) {
      const i64 row = (n * C + c) * HW;
      float a = 0, b = 0;
      row_gradient_sums(dout + row, relu_out ? relu_out + row : nullptr, inp + row, m, HW, a, b);
      dy_sum += a;
      dy_centred_sum += b;
    }
    const double dy_norm_sum = dy_centred_sum * rstd[c];
    sums[c] = dy_sum;
    sums[C + c] = dy_norm_sum;
    dweight[c] += static_cast<float>(dy_norm_sum);
    dbias[c] += static_cast<float>(dy_sum);
  });
}

// dx = rstd (dy weight - dnorm_mean - (x - m) rstd dnorm_norm_mean), constants per channel.
SB_DECLARE_BATCHNORM2D_BACKWARD_APPLY(float, float) {
  parallel_for_each("sb::batchnorm2d_backward_apply", N * C, [=](i64 nc) {
    const i64 c = nc % C;
    const double s = rstd[c], w = weight[c];
    const double dnorm_mean = w * sums[c] / count, dnorm_norm_mean = w * sums[C + c] / count;
    const double b = s * s * dnorm_norm_mean;
    const i64 row = nc * HW;
    backward_apply_row(dinp + row, dout + row, relu_out ? relu_out + row : nullptr, inp + row,
                       mean[c], static_cast<float>(w * s), static_cast<float>(b),
                       static_cast<float>(s * dnorm_mean), HW);
  });
}

}  // namespace sb::kernels::cpu
