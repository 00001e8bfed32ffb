// SPDX-License-Identifier: Apache-2.0
// Reference BatchNorm2d split at its per-channel reductions (synchronised BatchNorm sums them
// across ranks in between): plain loops, sums in double. Leaves out threading.
#include <algorithm>
#include <cmath>

#include "core/check.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

template <class T>
SB_DECLARE_BATCHNORM2D_CHANNEL_SUMS(T, T) {
  for (i64 c = 0; c < C; ++c) {
    double sum = 0, sum_sq = 0;
    for (i64 n = 0; n < N; ++n)
      for (i64 i = 0; i < HW; ++i) {
        const double x = inp[(n * C + c) * HW + i];
        sum += x;
        sum_sq += x * x;
      }
    sums[c] = sum;
    sums[C + c] = sum_sq;
  }
}

// var = Σx²/count - mean², clamped at 0 against rounding; formed in double, rounded once.
template <class T>
SB_DECLARE_BATCHNORM2D_STATISTICS(T, T) {
  SB_CHECK(count > 1, "batchnorm2d_statistics: needs more than one value per channel, got {}",
           count);
  for (i64 c = 0; c < C; ++c) {
    const double m = sums[c] / count;
    const double biased_var = std::max(0.0, sums[C + c] / count - m * m);
    mean[c] = static_cast<T>(m);
    rstd[c] = static_cast<T>(1.0 / std::sqrt(biased_var + eps));
    running_mean[c] = static_cast<T>((1.0 - momentum) * running_mean[c] + momentum * m);
    running_var[c] = static_cast<T>((1.0 - momentum) * running_var[c] +
                                    momentum * biased_var * count / (count - 1));
  }
}

template <class T>
SB_DECLARE_BATCHNORM2D_FORWARD_APPLY(T, T) {
  for (i64 n = 0; n < N; ++n)
    for (i64 c = 0; c < C; ++c)
      for (i64 i = 0; i < HW; ++i) {
        const i64 index = (n * C + c) * HW + i;
        T y = (inp[index] - mean[c]) * rstd[c] * weight[c] + bias[c];
        if (residual) y += residual[index];
        out[index] = relu && y < T(0) ? T(0) : y;
      }
}

template <class T>
SB_DECLARE_BATCHNORM2D_BACKWARD_SUMS(T, T) {
  for (i64 c = 0; c < C; ++c) {
    double dy_sum = 0, dy_norm_sum = 0;
    for (i64 n = 0; n < N; ++n)
      for (i64 i = 0; i < HW; ++i) {
        const i64 index = (n * C + c) * HW + i;
        const T dy = relu_out && !(relu_out[index] > T(0)) ? T(0) : dout[index];
        dy_sum += dy;
        dy_norm_sum += static_cast<double>(dy) * ((inp[index] - mean[c]) * rstd[c]);
      }
    sums[c] = dy_sum;
    sums[C + c] = dy_norm_sum;
    dweight[c] += static_cast<T>(dy_norm_sum);
    dbias[c] += static_cast<T>(dy_sum);
  }
}

template <class T>
SB_DECLARE_BATCHNORM2D_BACKWARD_APPLY(T, T) {
  for (i64 n = 0; n < N; ++n)
    for (i64 c = 0; c < C; ++c) {
      const T dnorm_mean = static_cast<T>(weight[c] * sums[c] / count);
      const T dnorm_norm_mean = static_cast<T>(weight[c] * sums[C + c] / count);
      for (i64 i = 0; i < HW; ++i) {
        const i64 index = (n * C + c) * HW + i;
        const T dy = relu_out && !(relu_out[index] > T(0)) ? T(0) : dout[index];
        const T norm = (inp[index] - mean[c]) * rstd[c];
        dinp[index] = (dy * weight[c] - dnorm_mean - norm * dnorm_norm_mean) * rstd[c];
      }
    }
}

#define SB_INSTANTIATE(DECLARE) \
  template DECLARE(float, float);    \
  template DECLARE(double, double);
SB_INSTANTIATE(SB_DECLARE_BATCHNORM2D_CHANNEL_SUMS)
SB_INSTANTIATE(SB_DECLARE_BATCHNORM2D_STATISTICS)
SB_INSTANTIATE(SB_DECLARE_BATCHNORM2D_FORWARD_APPLY)
SB_INSTANTIATE(SB_DECLARE_BATCHNORM2D_BACKWARD_SUMS)
SB_INSTANTIATE(SB_DECLARE_BATCHNORM2D_BACKWARD_APPLY)
#undef SB_INSTANTIATE

}  // namespace sb::kernels::reference
