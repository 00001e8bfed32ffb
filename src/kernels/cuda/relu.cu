// SPDX-License-Identifier: Apache-2.0
// CUDA ReLU; backward masks with the forward output, as the reference (in-place forward).
// Leaves out leaky and clipped variants.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

SB_DECLARE_RELU_FORWARD(float, float) {
  for_each_index(N, [=] __device__(i64 i) { out[i] = inp[i] > 0.0f ? inp[i] : 0.0f; });
}

SB_DECLARE_RELU_BACKWARD(float, float) {
  for_each_index(N, [=] __device__(i64 i) {
    if (out[i] > 0.0f) dinp[i] += dout[i];
  });
}

}  // namespace sb::kernels::cuda
