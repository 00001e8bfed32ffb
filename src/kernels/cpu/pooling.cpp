// SPDX-License-Identifier: Apache-2.0
// Global average pooling with Kokkos over (image, channel) rows, each row one vectorised
// loop. Leaves out windowed pooling (max or average).
#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

namespace {

SB_CPU_VECTOR_CLONES
float row_mean(const float* x, i64 n) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (i64 i = 0; i < n; ++i) sum += x[i];
  return sum / static_cast<float>(n);
}

SB_CPU_VECTOR_CLONES
void row_add(float* x, float value, i64 n) {
  for (i64 i = 0; i < n; ++i) x[i] += value;
}

}  // namespace

SB_DECLARE_GLOBAL_AVGPOOL_FORWARD(float, float) {
  parallel_for_each("sb::global_avgpool_forward", N * C,
                    [=](i64 nc) { out[nc] = row_mean(inp + nc * HW, HW); });
}

SB_DECLARE_GLOBAL_AVGPOOL_BACKWARD(float, float) {
  parallel_for_each("sb::global_avgpool_backward", N * C, [=](i64 nc) {
    row_add(dinp + nc * HW, dout[nc] / static_cast<float>(HW), HW);
  });
}

}  // namespace sb::kernels::cpu
