// SPDX-License-Identifier: Apache-2.0
// Device-side conversion between float and a GEMM storage type (f32, f16, bf16), and a
// counter-based uniform fill, for GEMM tests and benchmarks. Leaves out stochastic rounding.
#pragma once

#include <cstdint>

#include "core/tensor.hpp"
#include "kernels/cuda/cuda_context.hpp"

namespace sb::kernels::cuda {

// dst (n) of dtype = src (n) rounded to nearest; src, dst device pointers.
void convert_from_float(CudaContext& ctx, DType dtype, void* dst, const float* src, std::int64_t n);
// dst (n) float = src (n) of dtype, exactly.
void convert_to_float(CudaContext& ctx, DType dtype, float* dst, const void* src, std::int64_t n);
// dst (n) of dtype uniform in [lo, hi), a hash of (seed, index): same values on every device.
void fill_uniform(CudaContext& ctx, DType dtype, void* dst, std::int64_t n, std::uint64_t seed,
                  float lo, float hi);

}  // namespace sb::kernels::cuda
