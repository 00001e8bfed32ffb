// SPDX-License-Identifier: Apache-2.0
// Reference fully connected layer: the triple loop, the ground truth for the BLAS version.
// Leaves out blocking, threading and BLAS on purpose.
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

template <class T>
SB_DECLARE_MATMUL_FORWARD(T, T) {
  for (i64 bt = 0; bt < BT; ++bt) {
    const T* inp_row = inp + bt * C;
    for (i64 o = 0; o < OC; ++o) {
      const T* w_row = weight + o * C;
      T sum = bias ? bias[o] : T(0);
      for (i64 c = 0; c < C; ++c) sum += inp_row[c] * w_row[c];
      out[bt * OC + o] = sum;
    }
  }
}

template <class T>
SB_DECLARE_MATMUL_BACKWARD(T, T) {
  for (i64 bt = 0; bt < BT; ++bt) {
    const T* inp_row = inp + bt * C;
    T* dinp_row = dinp + bt * C;
    for (i64 o = 0; o < OC; ++o) {
      const T d = dout[bt * OC + o];
      const T* w_row = weight + o * C;
      T* dw_row = dweight + o * C;
      for (i64 c = 0; c < C; ++c) {
        dinp_row[c] += d * w_row[c];
        dw_row[c] += d * inp_row[c];
      }
      if (dbias) dbias[o] += d;
    }
  }
}

template SB_DECLARE_MATMUL_FORWARD(float, float);
template SB_DECLARE_MATMUL_FORWARD(double, double);
template SB_DECLARE_MATMUL_BACKWARD(float, float);
template SB_DECLARE_MATMUL_BACKWARD(double, double);

}  // namespace sb::kernels::reference
