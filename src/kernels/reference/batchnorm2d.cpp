// SPDX-License-Identifier: Apache-2.0
// Reference BatchNorm2d (PyTorch semantics): per-channel batch statistics over (N, HW) summed in
// double, running statistics with the unbiased variance. Leaves out threading and Welford.
#include <cmath>

#include "core/check.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

// Two plain passes per channel: the mean, then the centred sum of squares, both summed over the
// whole batch in double so that reference<float> stays a ground truth for them. rstd uses the
// biased variance (sum_sq / M); running_var takes the unbiased one (sum_sq / (M - 1)).
template <class T>
SB_DECLARE_BATCHNORM2D_FORWARD_TRAIN(T, T) {
  const i64 M = N * HW;
  SB_CHECK(M > 1, "batchnorm2d_forward_train: needs more than one value per channel, got N={} "
           "HW={}", N, HW);
  const T keep = static_cast<T>(1.0 - momentum), take = static_cast<T>(momentum);
  for (i64 c = 0; c < C; ++c) {
    double sum = 0;
    for (i64 n = 0; n < N; ++n)
      for (i64 i = 0; i < HW; ++i) sum += inp[(n * C + c) * HW + i];
    const T m = static_cast<T>(sum / static_cast<double>(M));
    double sum_sq = 0;
    for (i64 n = 0; n < N; ++n)
      for (i64 i = 0; i < HW; ++i) {
        const double centred = inp[(n * C + c) * HW + i] - m;
        sum_sq += centred * centred;
      }
    const T biased_var = static_cast<T>(sum_sq / static_cast<double>(M));
    const T s = T(1) / std::sqrt(biased_var + static_cast<T>(eps));
    for (i64 n = 0; n < N; ++n)
      for (i64 i = 0; i < HW; ++i) {
        const i64 index = (n * C + c) * HW + i;
        out[index] = (inp[index] - m) * s * weight[c] + bias[c];
      }
    mean[c] = m;
    rstd[c] = s;
    running_mean[c] = keep * running_mean[c] + take * m;
    const T unbiased_var = static_cast<T>(sum_sq / static_cast<double>(M - 1));
    running_var[c] = keep * running_var[c] + take * unbiased_var;
  }
}

template <class T>
SB_DECLARE_BATCHNORM2D_FORWARD_EVAL(T, T) {
  for (i64 n = 0; n < N; ++n)
    for (i64 c = 0; c < C; ++c) {
      const T s = T(1) / std::sqrt(running_var[c] + static_cast<T>(eps));
      for (i64 i = 0; i < HW; ++i) {
        const i64 index = (n * C + c) * HW + i;
        out[index] = (inp[index] - running_mean[c]) * s * weight[c] + bias[c];
      }
    }
}

// With norm = (x - mean) rstd and dnorm = dout weight, over the M = N·HW values of a channel:
// dx = rstd (dnorm - mean(dnorm) - norm mean(dnorm norm)), the batch statistics' share
// included; dweight = sum(dout norm), dbias = sum(dout).
template <class T>
SB_DECLARE_BATCHNORM2D_BACKWARD(T, T) {
  const double M = static_cast<double>(N * HW);
  for (i64 c = 0; c < C; ++c) {
    double dout_sum = 0, dout_norm_sum = 0;
    for (i64 n = 0; n < N; ++n)
      for (i64 i = 0; i < HW; ++i) {
        const i64 index = (n * C + c) * HW + i;
        dout_sum += dout[index];
        dout_norm_sum += static_cast<double>(dout[index]) * ((inp[index] - mean[c]) * rstd[c]);
      }
    const T dnorm_mean = static_cast<T>(weight[c] * dout_sum / M);
    const T dnorm_norm_mean = static_cast<T>(weight[c] * dout_norm_sum / M);
    for (i64 n = 0; n < N; ++n)
      for (i64 i = 0; i < HW; ++i) {
        const i64 index = (n * C + c) * HW + i;
        const T norm = (inp[index] - mean[c]) * rstd[c];
        dinp[index] += (dout[index] * weight[c] - dnorm_mean - norm * dnorm_norm_mean) * rstd[c];
      }
    dweight[c] += static_cast<T>(dout_norm_sum);
    dbias[c] += static_cast<T>(dout_sum);
  }
}

template SB_DECLARE_BATCHNORM2D_FORWARD_TRAIN(float, float);
template SB_DECLARE_BATCHNORM2D_FORWARD_TRAIN(double, double);
template SB_DECLARE_BATCHNORM2D_FORWARD_EVAL(float, float);
template SB_DECLARE_BATCHNORM2D_FORWARD_EVAL(double, double);
template SB_DECLARE_BATCHNORM2D_BACKWARD(float, float);
template SB_DECLARE_BATCHNORM2D_BACKWARD(double, double);

}  // namespace sb::kernels::reference
