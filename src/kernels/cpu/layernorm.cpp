// SPDX-License-Identifier: Apache-2.0
// LayerNorm with Kokkos: rows in parallel, each row's passes vectorised; the weight and bias
// gradients in a second pass over column blocks. Leaves out one-pass (Welford) statistics.
#include <cmath>

#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

namespace {

constexpr float kLayernormEps = 1e-5f;
// dweight/dbias columns per task: 32 floats, two cache lines per row.
constexpr i64 kLayernormColumnBlock = 32;

SB_CPU_VECTOR_CLONES
void layernorm_forward_row(float* y, float* mean, float* rstd, const float* x,
                           const float* weight, const float* bias, i64 C) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (i64 c = 0; c < C; ++c) sum += x[c];
  const float m = sum / static_cast<float>(C);
  float sum_sq = 0;
#pragma omp simd reduction(+ : sum_sq)
  for (i64 c = 0; c < C; ++c) sum_sq += (x[c] - m) * (x[c] - m);
  const float s = 1.0f / std::sqrt(sum_sq / static_cast<float>(C) + kLayernormEps);
  for (i64 c = 0; c < C; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
  *mean = m;
  *rstd = s;
}

// dx += rstd (dnorm - mean(dnorm) - norm mean(dnorm norm)), dnorm = dy weight.
SB_CPU_VECTOR_CLONES
void layernorm_backward_row(float* dx, const float* dy, const float* x, const float* weight,
                            float m, float s, i64 C) {
  float dnorm_sum = 0, dnorm_norm_sum = 0;
#pragma omp simd reduction(+ : dnorm_sum, dnorm_norm_sum)
  for (i64 c = 0; c < C; ++c) {
    const float dnorm = dy[c] * weight[c];
    dnorm_sum += dnorm;
    dnorm_norm_sum += dnorm * ((x[c] - m) * s);
  }
  const float dnorm_mean = dnorm_sum / static_cast<float>(C);
  const float dnorm_norm_mean = dnorm_norm_sum / static_cast<float>(C);
  for (i64 c = 0; c < C; ++c) {
    const float norm = (x[c] - m) * s;
    dx[c] += (dy[c] * weight[c] - dnorm_mean - norm * dnorm_norm_mean) * s;
  }
}

}  // namespace

SB_DECLARE_LAYERNORM_FORWARD(float, float) {
  parallel_for_each("sb::layernorm_forward", N, [=](i64 n) {
    layernorm_forward_row(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C);
  });
}

SB_DECLARE_LAYERNORM_BACKWARD(float, float) {
  parallel_for_each("sb::layernorm_backward::dinp", N, [=](i64 n) {
    layernorm_backward_row(dinp + n * C, dout + n * C, inp + n * C, weight, mean[n], rstd[n], C);
  });
  // dweight and dbias sum over all rows: a task owns a block of columns and adds rows in
  // order, so there are no shared writes and the result does not depend on the thread count.
  const i64 blocks = (C + kLayernormColumnBlock - 1) / kLayernormColumnBlock;
  parallel_for_each("sb::layernorm_backward::dweight_dbias", blocks, [=](i64 block) {
    const i64 c0 = block * kLayernormColumnBlock;
    const i64 width = std::min(kLayernormColumnBlock, C - c0);
    float dweight_sum[kLayernormColumnBlock] = {}, dbias_sum[kLayernormColumnBlock] = {};
    for (i64 n = 0; n < N; ++n) {
      const float* x = inp + n * C + c0;
      const float* dy = dout + n * C + c0;
      const float m = mean[n], s = rstd[n];
      for (i64 j = 0; j < width; ++j) {
        dweight_sum[j] += dy[j] * ((x[j] - m) * s);
        dbias_sum[j] += dy[j];
      }
    }
    for (i64 j = 0; j < width; ++j) {
      dweight[c0 + j] += dweight_sum[j];
      dbias[c0 + j] += dbias_sum[j];
    }
  });
}

}  // namespace sb::kernels::cpu
