// SPDX-License-Identifier: Apache-2.0
// Reference LayerNorm over the last dimension (PyTorch semantics: biased variance, eps 1e-5).
// Leaves out threading and fused variance tricks: two plain passes per row.
#include <cmath>

#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

namespace {
constexpr double kLayernormEps = 1e-5;
}

template <class T>
SB_DECLARE_LAYERNORM_FORWARD(T, T) {
  for (i64 n = 0; n < N; ++n) {
    const T* x = inp + n * C;
    T sum = 0;
    for (i64 c = 0; c < C; ++c) sum += x[c];
    const T m = sum / static_cast<T>(C);
    T sum_sq = 0;
    for (i64 c = 0; c < C; ++c) sum_sq += (x[c] - m) * (x[c] - m);
    const T variance = sum_sq / static_cast<T>(C);
    const T s = T(1) / std::sqrt(variance + static_cast<T>(kLayernormEps));
    T* y = out + n * C;
    for (i64 c = 0; c < C; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

// With norm = (x - mean) rstd and dnorm = dout * weight:
// dx = rstd (dnorm - mean(dnorm) - norm * mean(dnorm * norm)).
template <class T>
SB_DECLARE_LAYERNORM_BACKWARD(T, T) {
  for (i64 n = 0; n < N; ++n) {
    const T* x = inp + n * C;
    const T* dy = dout + n * C;
    const T m = mean[n], s = rstd[n];
    T dnorm_sum = 0, dnorm_norm_sum = 0;
    for (i64 c = 0; c < C; ++c) {
      const T norm = (x[c] - m) * s;
      const T dnorm = dy[c] * weight[c];
      dnorm_sum += dnorm;
      dnorm_norm_sum += dnorm * norm;
    }
    const T dnorm_mean = dnorm_sum / static_cast<T>(C);
    const T dnorm_norm_mean = dnorm_norm_sum / static_cast<T>(C);
    T* dx = dinp + n * C;
    for (i64 c = 0; c < C; ++c) {
      const T norm = (x[c] - m) * s;
      const T dnorm = dy[c] * weight[c];
      dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
      dweight[c] += dy[c] * norm;
      dbias[c] += dy[c];
    }
  }
}

template SB_DECLARE_LAYERNORM_FORWARD(float, float);
template SB_DECLARE_LAYERNORM_FORWARD(double, double);
template SB_DECLARE_LAYERNORM_BACKWARD(float, float);
template SB_DECLARE_LAYERNORM_BACKWARD(double, double);

}  // namespace sb::kernels::reference
