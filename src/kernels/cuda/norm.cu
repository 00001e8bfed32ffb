// SPDX-License-Identifier: Apache-2.0
// CUDA squared L2 norm (double accumulation, fixed two-stage tree: repeatable bit for bit)
// and in-place scaling. Leaves out the multi-tensor norm over all gradients at once.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

constexpr int kNormBlocks = 1024;

__global__ void squared_norm_partials(double* partials, const float* x, i64 N) {
  double sum = 0.0;
  for (i64 i = grid_index(); i < N; i += grid_stride()) {
    const double value = x[i];
    sum += value * value;
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void sum_partials(double* result, const double* partials, int count) {
  double sum = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  sum = block_sum(sum);
  if (threadIdx.x == 0) *result = sum;
}

}  // namespace

SB_DECLARE_SQUARED_NORM(float, float) {
  if (N <= 0) return 0.0;
  CudaContext& ctx = default_context();
  auto* partials = static_cast<double*>(ctx.scratch((kNormBlocks + 1) * sizeof(double)));
  const unsigned blocks = blocks_for(N) < kNormBlocks ? blocks_for(N) : kNormBlocks;
  squared_norm_partials<<<blocks, kThreads, 0, ctx.stream()>>>(partials, x, N);
  SB_CUDA_CHECK_LAUNCH();
  sum_partials<<<1, kThreads, 0, ctx.stream()>>>(partials + kNormBlocks, partials,
                                                  static_cast<int>(blocks));
  SB_CUDA_CHECK_LAUNCH();
  double result = 0.0;
  SB_CUDA_CHECK(cudaMemcpyAsync(&result, partials + kNormBlocks, sizeof(double),
                                cudaMemcpyDeviceToHost, ctx.stream()));
  ctx.synchronize();
  return result;
}

SB_DECLARE_SCALE_INPLACE(float, float) {
  for_each_index(N, [=] __device__(i64 i) {
    x[i] = static_cast<float>(static_cast<double>(x[i]) * factor);
  });
}

}  // namespace sb::kernels::cuda
