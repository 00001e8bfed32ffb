// SPDX-License-Identifier: Apache-2.0
// Reference residual connection: elementwise sum and its gradient fan-out.
// Leaves out threading and in-place variants.
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

template <class T>
SB_DECLARE_RESIDUAL_FORWARD(T, T) {
  for (i64 i = 0; i < N; ++i) out[i] = a[i] + b[i];
}

template <class T>
SB_DECLARE_RESIDUAL_BACKWARD(T, T) {
  for (i64 i = 0; i < N; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

template SB_DECLARE_RESIDUAL_FORWARD(float, float);
template SB_DECLARE_RESIDUAL_FORWARD(double, double);
template SB_DECLARE_RESIDUAL_BACKWARD(float, float);
template SB_DECLARE_RESIDUAL_BACKWARD(double, double);

}  // namespace sb::kernels::reference
