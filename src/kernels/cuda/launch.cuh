// SPDX-License-Identifier: Apache-2.0
// Launch shapes and block-wide reductions shared by the CUDA kernels (device code only).
// Leaves out cooperative groups and CUB: the sums here are small and must be deterministic.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace sb::kernels::cuda {

inline constexpr int kThreads = 256;        // threads of an element-wise block
inline constexpr int kRowThreads = 128;     // threads of a block that owns one row
inline constexpr std::int64_t kMaxBlocks = 65535LL * 16;

// Blocks for a grid-stride loop over n elements.
inline unsigned blocks_for(std::int64_t n, int threads = kThreads) {
  const std::int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

// for (i64 i : grid_stride(n)) style index of the calling thread, and its stride.
__device__ inline std::int64_t grid_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

template <class T>
__device__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <class T>
__device__ T warp_max(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the block, returned to every thread; blockDim.x a multiple of 32. The fixed tree
// makes the result independent of timing (bit-for-bit repeatable).
template <class T>
__device__ T block_sum(T v) {
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  __syncthreads();  // a previous call's readers are done with partial[]
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : T(0);
  return warp_sum(v);
}

template <class T>
__device__ T block_max(T v) {
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : T(-INFINITY);
  return warp_max(v);
}

}  // namespace sb::kernels::cuda
