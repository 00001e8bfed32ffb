// SPDX-License-Identifier: Apache-2.0
// The int8 inference kernels' last step on the host: int32 sums to floats with the reference's
// dequantisation (one fma an output), vectorised and spread over the threads. Shared by the
// int8 GEMM and convolution whichever kernel summed. Leaves out the sums.
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"

namespace sb::kernels::cpu {

// sums (rows, OC) -> out (rows, OC) = fma(float(sum), inp_scale·weight_scale[o], bias[o] or 0)
// (OVERWRITTEN), the product inp_scale·weight_scale[o] rounded to float as the reference does.
void dequantise_rows(float* out, const std::int32_t* sums, float inp_scale, const float* weight_scale,
                     const float* bias, i64 rows, i64 OC);

}  // namespace sb::kernels::cpu
