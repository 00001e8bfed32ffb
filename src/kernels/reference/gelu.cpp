// SPDX-License-Identifier: Apache-2.0
// Reference GELU, tanh approximation (as GPT-2 and PyTorch approximate="tanh").
// Leaves out threading and fast tanh approximations: std::tanh is the ground truth.
#include <cmath>

#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;
}  // namespace

template <class T>
SB_DECLARE_GELU_FORWARD(T, T) {
  const T s = static_cast<T>(kSqrt2OverPi), a = static_cast<T>(kGeluCubic);
  for (i64 i = 0; i < N; ++i) {
    const T x = inp[i];
    out[i] = T(0.5) * x * (T(1) + std::tanh(s * (x + a * x * x * x)));
  }
}

// d/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) s (1 + 3 a x^2), u = s (x + a x^3).
template <class T>
SB_DECLARE_GELU_BACKWARD(T, T) {
  const T s = static_cast<T>(kSqrt2OverPi), a = static_cast<T>(kGeluCubic);
  for (i64 i = 0; i < N; ++i) {
    const T x = inp[i];
    const T tanh_u = std::tanh(s * (x + a * x * x * x));
    const T local_grad = T(0.5) * (T(1) + tanh_u) +
                         T(0.5) * x * (T(1) - tanh_u * tanh_u) * s * (T(1) + T(3) * a * x * x);
    dinp[i] += local_grad * dout[i];
  }
}

template SB_DECLARE_GELU_FORWARD(float, float);
template SB_DECLARE_GELU_FORWARD(double, double);
template SB_DECLARE_GELU_BACKWARD(float, float);
template SB_DECLARE_GELU_BACKWARD(double, double);

}  // namespace sb::kernels::reference
