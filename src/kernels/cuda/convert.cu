// SPDX-License-Identifier: Apache-2.0
// Conversions float <-> f16/bf16 on the device, and the uniform fill of benchmark operands.
// Leaves out vectorised conversion: these run at set-up, outside timed regions.
#include "kernels/cuda/convert.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launch.cuh"

namespace sb::kernels::cuda {

namespace {

__device__ inline void store(DType dtype, void* dst, std::int64_t i, float value) {
  switch (dtype) {
    case DType::f16: static_cast<__half*>(dst)[i] = __float2half_rn(value); break;
    case DType::bf16: static_cast<__nv_bfloat16*>(dst)[i] = __float2bfloat16_rn(value); break;
    default: static_cast<float*>(dst)[i] = value; break;
  }
}

__device__ inline float load(DType dtype, const void* src, std::int64_t i) {
  switch (dtype) {
    case DType::f16: return __half2float(static_cast<const __half*>(src)[i]);
    case DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(src)[i]);
    default: return static_cast<const float*>(src)[i];
  }
}

__global__ void from_float_kernel(DType dtype, void* dst, const float* src, std::int64_t n) {
  for (std::int64_t i = grid_index(); i < n; i += grid_stride()) store(dtype, dst, i, src[i]);
}

__global__ void to_float_kernel(DType dtype, float* dst, const void* src, std::int64_t n) {
  for (std::int64_t i = grid_index(); i < n; i += grid_stride()) dst[i] = load(dtype, src, i);
}

// splitmix64 of (seed, index): the top 24 bits give a uniform float in [0, 1).
__global__ void fill_uniform_kernel(DType dtype, void* dst, std::int64_t n, std::uint64_t seed,
                                    float lo, float hi) {
  for (std::int64_t i = grid_index(); i < n; i += grid_stride()) {
    std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(i) + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float unit = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
    store(dtype, dst, i, lo + (hi - lo) * unit);
  }
}

void check_storage(DType dtype) {
  SB_CHECK(dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16,
           "GEMM storage must be f32, f16 or bf16, not {}", to_string(dtype));
}

}  // namespace

void convert_from_float(CudaContext& ctx, DType dtype, void* dst, const float* src, std::int64_t n) {
  check_storage(dtype);
  if (n <= 0) return;
  from_float_kernel<<<blocks_for(n), kThreads, 0, ctx.stream()>>>(dtype, dst, src, n);
  SB_CUDA_CHECK_LAUNCH();
}

void convert_to_float(CudaContext& ctx, DType dtype, float* dst, const void* src, std::int64_t n) {
  check_storage(dtype);
  if (n <= 0) return;
  to_float_kernel<<<blocks_for(n), kThreads, 0, ctx.stream()>>>(dtype, dst, src, n);
  SB_CUDA_CHECK_LAUNCH();
}

void fill_uniform(CudaContext& ctx, DType dtype, void* dst, std::int64_t n, std::uint64_t seed,
                  float lo, float hi) {
  check_storage(dtype);
  if (n <= 0) return;
  fill_uniform_kernel<<<blocks_for(n), kThreads, 0, ctx.stream()>>>(dtype, dst, n, seed, lo, hi);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::kernels::cuda
