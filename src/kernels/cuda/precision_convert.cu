// SPDX-License-Identifier: Apache-2.0
// CUDA float <-> bf16/fp16 conversions: grid-stride loops over the same host/device functions as
// the reference (precision/bf16.hpp, precision/fp16.hpp), so the three back-ends agree bit for bit
// (NaN payloads included). Leaves out the __float2bfloat16_rn/__float2half_rn intrinsics (used
// by convert.cu for GEMM set-up) and vectorised 16-byte access, a later optimisation.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::cuda {

SB_DECLARE_CONVERT_F32_TO_BF16 {
  for_each_index(N, [=] __device__(i64 i) { out[i] = to_bf16(inp[i]); });
}

SB_DECLARE_CONVERT_BF16_TO_F32 {
  for_each_index(N, [=] __device__(i64 i) { out[i] = to_float(inp[i]); });
}

SB_DECLARE_CONVERT_F32_TO_FP16 {
  for_each_index(N, [=] __device__(i64 i) { out[i] = to_fp16(inp[i]); });
}

SB_DECLARE_CONVERT_FP16_TO_F32 {
  for_each_index(N, [=] __device__(i64 i) { out[i] = to_float(inp[i]); });
}

}  // namespace sb::kernels::cuda
