// SPDX-License-Identifier: Apache-2.0
// CUDA GELU, tanh approximation, element-wise. Leaves out the fast tanh.approx instruction:
// tanhf keeps the result within a few ulp of the reference.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
}  // namespace

SB_DECLARE_GELU_FORWARD(float, float) {
  for_each_index(N, [=] __device__(i64 i) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
  });
}

SB_DECLARE_GELU_BACKWARD(float, float) {
  for_each_index(N, [=] __device__(i64 i) {
    const float x = inp[i];
    const float tanh_u = tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
    const float local_grad = 0.5f * (1.0f + tanh_u) + 0.5f * x * (1.0f - tanh_u * tanh_u) *
                                                          kSqrt2OverPi *
                                                          (1.0f + 3.0f * kGeluCubic * x * x);
    dinp[i] += local_grad * dout[i];
  });
}

}  // namespace sb::kernels::cuda
