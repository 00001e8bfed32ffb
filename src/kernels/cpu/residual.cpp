// SPDX-License-Identifier: Apache-2.0
// Residual connection with Kokkos over chunks: memory-bound, so plain vectorised loops.
// Leaves out fusing the residual into neighbouring kernels.
#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

SB_DECLARE_RESIDUAL_FORWARD(float, float) {
  parallel_for_chunks("sb::residual_forward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    for (i64 i = begin; i < end; ++i) out[i] = a[i] + b[i];
  });
}

SB_DECLARE_RESIDUAL_BACKWARD(float, float) {
  parallel_for_chunks("sb::residual_backward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    for (i64 i = begin; i < end; ++i) {
      da[i] += dout[i];
      db[i] += dout[i];
    }
  });
}

}  // namespace sb::kernels::cpu
