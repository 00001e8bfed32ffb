// SPDX-License-Identifier: Apache-2.0
// CUDA residual connection: element-wise sum and its gradient fan-out.
// Leaves out fusion with the neighbouring LayerNorm (a later optimisation).
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

SB_DECLARE_RESIDUAL_FORWARD(float, float) {
  for_each_index(N, [=] __device__(i64 i) { out[i] = a[i] + b[i]; });
}

SB_DECLARE_RESIDUAL_BACKWARD(float, float) {
  for_each_index(N, [=] __device__(i64 i) {
    da[i] += dout[i];
    db[i] += dout[i];
  });
}

}  // namespace sb::kernels::cuda
