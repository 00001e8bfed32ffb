// SPDX-License-Identifier: Apache-2.0
// Reference ReLU; the backward masks with the forward OUTPUT, so the forward may run in place.
// Leaves out threading and leaky or clipped variants.
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

template <class T>
SB_DECLARE_RELU_FORWARD(T, T) {
  for (i64 i = 0; i < N; ++i) out[i] = inp[i] > T(0) ? inp[i] : T(0);
}

// The gradient at 0 is 0, as in PyTorch (threshold_backward on the output).
template <class T>
SB_DECLARE_RELU_BACKWARD(T, T) {
  for (i64 i = 0; i < N; ++i)
    if (out[i] > T(0)) dinp[i] += dout[i];
}

template SB_DECLARE_RELU_FORWARD(float, float);
template SB_DECLARE_RELU_FORWARD(double, double);
template SB_DECLARE_RELU_BACKWARD(float, float);
template SB_DECLARE_RELU_BACKWARD(double, double);

}  // namespace sb::kernels::reference
