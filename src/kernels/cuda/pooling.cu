// SPDX-License-Identifier: Apache-2.0
// CUDA global average pooling over the spatial positions of every (image, channel).
// Leaves out windowed pooling.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

// One thread per (n, c), positions summed in order as the reference.
SB_DECLARE_GLOBAL_AVGPOOL_FORWARD(float, float) {
  for_each_index(N * C, [=] __device__(i64 nc) {
    float sum = 0.0f;
    for (i64 i = 0; i < HW; ++i) sum += inp[nc * HW + i];
    out[nc] = sum / static_cast<float>(HW);
  });
}

SB_DECLARE_GLOBAL_AVGPOOL_BACKWARD(float, float) {
  for_each_index(N * C * HW, [=] __device__(i64 i) {
    dinp[i] += dout[i / HW] / static_cast<float>(HW);
  });
}

}  // namespace sb::kernels::cuda
