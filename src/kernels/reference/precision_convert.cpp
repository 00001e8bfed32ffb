// SPDX-License-Identifier: Apache-2.0
// Reference float <-> bf16/fp16 conversions: one scalar loop over the functions of
// precision/bf16.hpp and precision/fp16.hpp, the ground truth of the cpu and cuda kernels.
// Leaves out threading and vectorisation.
#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::reference {

SB_DECLARE_CONVERT_F32_TO_BF16 {
  for (i64 i = 0; i < N; ++i) out[i] = to_bf16(inp[i]);
}

SB_DECLARE_CONVERT_BF16_TO_F32 {
  for (i64 i = 0; i < N; ++i) out[i] = to_float(inp[i]);
}

SB_DECLARE_CONVERT_F32_TO_FP16 {
  for (i64 i = 0; i < N; ++i) out[i] = to_fp16(inp[i]);
}

SB_DECLARE_CONVERT_FP16_TO_F32 {
  for (i64 i = 0; i < N; ++i) out[i] = to_float(inp[i]);
}

}  // namespace sb::kernels::reference
