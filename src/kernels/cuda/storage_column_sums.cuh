// SPDX-License-Identifier: Apache-2.0
// Column sums of a (N,C) 16-bit or fp32 tensor into fp32 (+=), for bias and LayerNorm parameter
// gradients of both the native 16-bit and the fp32 kernels: blocks of 32 columns × 8 row lanes each sum one slice of the rows, the slices'
// partial sums go to the context's scratch, and one thread per column adds them in slice order.
// Deterministic (no atomics, a fixed tree). Leaves out a fused single pass with a grid barrier.
#pragma once

#include <algorithm>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/storage_types.cuh"

namespace sb::kernels::cuda::native {

inline constexpr int kColumnLanes = 32, kRowLanes = 8;

// Rows [slice·rows_per_slice, ...) of columns blockIdx.x·32 ..: first[slice, c] = Σ dy and, with
// inp (LayerNorm), second[slice, c] = Σ dy·norm, norm = (inp - mean[n]) rstd[n].
template <class D>
__global__ void column_slice_sums(float* first, float* second, const D* dy, const D* inp, const float* mean,
                                  const float* rstd, i64 N, i64 C, i64 rows_per_slice) {
  __shared__ float sums[2][kRowLanes][kColumnLanes];
  const i64 c = static_cast<i64>(blockIdx.x) * kColumnLanes + threadIdx.x;
  const i64 slice = blockIdx.y;
  const i64 row_end = std::min(N, (slice + 1) * rows_per_slice);
  float sum_dy = 0.0f, sum_dy_norm = 0.0f;
  if (c < C)
    for (i64 n = slice * rows_per_slice + threadIdx.y; n < row_end; n += kRowLanes) {
      const float g = widen(dy[n * C + c]);
      sum_dy += g;
      if (inp) sum_dy_norm += g * ((widen(inp[n * C + c]) - mean[n]) * rstd[n]);
    }
  sums[0][threadIdx.y][threadIdx.x] = sum_dy;
  sums[1][threadIdx.y][threadIdx.x] = sum_dy_norm;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float a = 0.0f, b = 0.0f;
    for (int r = 0; r < kRowLanes; ++r) a += sums[0][r][threadIdx.x], b += sums[1][r][threadIdx.x];
    first[slice * C + c] = a;
    if (inp) second[slice * C + c] = b;
  }
}

// target (C) += Σ over slices of partial (slices, C), in slice order.
__global__ inline void add_slice_sums(float* target, const float* partial, i64 slices, i64 C) {
  for (i64 c = grid_index(); c < C; c += grid_stride()) {
    float sum = 0.0f;
    for (i64 s = 0; s < slices; ++s) sum += partial[s * C + c];
    target[c] += sum;
  }
}

// dsum (C) += Σ_n dy (N,C); with inp: dnorm_sum (C) += Σ_n dy·norm (LayerNorm's dweight).
// Either target may be nullptr (skipped).
template <class D>
void accumulate_column_sums(CudaContext& ctx, float* dsum, float* dnorm_sum, const D* dy, const D* inp,
                            const float* mean, const float* rstd, i64 N, i64 C) {
  if (N <= 0 || C <= 0 || (!dsum && !dnorm_sum)) return;
  const i64 column_blocks = (C + kColumnLanes - 1) / kColumnLanes;
  // About 4 blocks per SM in all, each slice at least 64 rows.
  const i64 slices = std::clamp<i64>(4 * 132 / column_blocks, 1, std::max<i64>(1, N / 64));
  const i64 rows_per_slice = (N + slices - 1) / slices;
  auto* partial = static_cast<float*>(ctx.scratch(static_cast<std::size_t>(2 * slices * C) * sizeof(float)));
  const dim3 grid(static_cast<unsigned>(column_blocks), static_cast<unsigned>(slices));
  column_slice_sums<<<grid, dim3(kColumnLanes, kRowLanes), 0, ctx.stream()>>>(
      partial, partial + slices * C, dy, inp, mean, rstd, N, C, rows_per_slice);
  SB_CUDA_CHECK_LAUNCH();
  if (dsum) {
    add_slice_sums<<<blocks_for(C), kThreads, 0, ctx.stream()>>>(dsum, partial, slices, C);
    SB_CUDA_CHECK_LAUNCH();
  }
  if (inp && dnorm_sum) {
    add_slice_sums<<<blocks_for(C), kThreads, 0, ctx.stream()>>>(dnorm_sum, partial + slices * C, slices, C);
    SB_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace sb::kernels::cuda::native
