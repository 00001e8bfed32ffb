// SPDX-License-Identifier: Apache-2.0
// a + b in a value type: floats add; 16-bit floats add in fp32 and round once to nearest even,
// as NCCL reduces them (the ring all-reduce, the sum of a tied weight's two 16-bit gradients).
// Leaves out the conversions themselves (bf16.hpp, fp16.hpp).
#pragma once

#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb {

inline float rounded_sum(float a, float b) { return a + b; }
inline bf16 rounded_sum(bf16 a, bf16 b) { return to_bf16(to_float(a) + to_float(b)); }
inline fp16 rounded_sum(fp16 a, fp16 b) { return to_fp16(to_float(a) + to_float(b)); }

}  // namespace sb
