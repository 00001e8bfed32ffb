// SPDX-License-Identifier: Apache-2.0
// GELU (tanh approximation) with Kokkos over chunks, each chunk one vectorised loop using the
// branch-free tanh of vector_math.hpp. Leaves out the erf form of GELU.
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace sb::kernels::cpu {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

SB_CPU_VECTOR_CLONES
void gelu_forward_chunk(float* out, const float* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanh_approx(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
  }
}

// d/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 a x^2).
SB_CPU_VECTOR_CLONES
void gelu_backward_chunk(float* dinp, const float* inp, const float* dout, i64 n) {
  for (i64 i = 0; i < n; ++i) {
    const float x = inp[i];
    const float tanh_u = tanh_approx(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
    const float local_grad =
        0.5f * (1.0f + tanh_u) +
        0.5f * x * (1.0f - tanh_u * tanh_u) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    dinp[i] += local_grad * dout[i];
  }
}

}  // namespace

SB_DECLARE_GELU_FORWARD(float, float) {
  parallel_for_chunks("sb::gelu_forward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    gelu_forward_chunk(out + begin, inp + begin, end - begin);
  });
}

SB_DECLARE_GELU_BACKWARD(float, float) {
  parallel_for_chunks("sb::gelu_backward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    gelu_backward_chunk(dinp + begin, inp + begin, dout + begin, end - begin);
  });
}

}  // namespace sb::kernels::cpu
