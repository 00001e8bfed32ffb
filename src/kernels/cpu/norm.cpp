// SPDX-License-Identifier: Apache-2.0
// Squared L2 norm (Kokkos parallel_reduce, double accumulation) and in-place scaling, for
// gradient clipping. Leaves out the norm over many tensors: callers sum squared norms.
#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

// Chunks are summed in double with a vectorised loop; Kokkos joins the per-thread partials in
// thread order, so the result is reproducible for a given thread count.
SB_DECLARE_SQUARED_NORM(float, float) {
  require_parallel_runtime("sb::squared_norm");
  const i64 chunks = (N + kElementwiseChunk - 1) / kElementwiseChunk;
  double total = 0;
  Kokkos::parallel_reduce(
      "sb::squared_norm", HostRange(0, chunks),
      [=](i64 chunk, double& sum) {
        const i64 begin = chunk * kElementwiseChunk;
        const i64 end = std::min(N, begin + kElementwiseChunk);
        double chunk_sum = 0;
#pragma omp simd reduction(+ : chunk_sum)
        for (i64 i = begin; i < end; ++i)
          chunk_sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
        sum += chunk_sum;
      },
      total);
  return total;
}

SB_DECLARE_SCALE_INPLACE(float, float) {
  parallel_for_chunks("sb::scale_inplace", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    for (i64 i = begin; i < end; ++i) x[i] = static_cast<float>(x[i] * factor);
  });
}

}  // namespace sb::kernels::cpu
