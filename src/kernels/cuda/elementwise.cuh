// SPDX-License-Identifier: Apache-2.0
// One grid-stride launch of an element-wise device lambda over n elements, on the default
// context's stream. Leaves out vectorised (16-byte) access, a later optimisation.
#pragma once

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"

namespace sb::kernels::cuda {

template <class Function>
__global__ void for_each_index_kernel(std::int64_t n, Function f) {
  for (std::int64_t i = grid_index(); i < n; i += grid_stride()) f(i);
}

// f(i) for i in [0, n): a __device__ lambda or functor.
template <class Function>
void for_each_index(std::int64_t n, Function f) {
  if (n <= 0) return;
  CudaContext& ctx = default_context();
  for_each_index_kernel<<<blocks_for(n), kThreads, 0, ctx.stream()>>>(n, f);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::kernels::cuda
