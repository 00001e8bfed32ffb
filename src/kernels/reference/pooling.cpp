// SPDX-License-Identifier: Apache-2.0
// Reference global average pooling over the spatial positions of every (image, channel).
// Leaves out windowed pooling (max or average) and threading.
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

template <class T>
SB_DECLARE_GLOBAL_AVGPOOL_FORWARD(T, T) {
  for (i64 nc = 0; nc < N * C; ++nc) {
    T sum = 0;
    for (i64 i = 0; i < HW; ++i) sum += inp[nc * HW + i];
    out[nc] = sum / static_cast<T>(HW);
  }
}

template <class T>
SB_DECLARE_GLOBAL_AVGPOOL_BACKWARD(T, T) {
  for (i64 nc = 0; nc < N * C; ++nc) {
    const T share = dout[nc] / static_cast<T>(HW);
    for (i64 i = 0; i < HW; ++i) dinp[nc * HW + i] += share;
  }
}

template SB_DECLARE_GLOBAL_AVGPOOL_FORWARD(float, float);
template SB_DECLARE_GLOBAL_AVGPOOL_FORWARD(double, double);
template SB_DECLARE_GLOBAL_AVGPOOL_BACKWARD(float, float);
template SB_DECLARE_GLOBAL_AVGPOOL_BACKWARD(double, double);

}  // namespace sb::kernels::reference
