// SPDX-License-Identifier: Apache-2.0
// a + b in a value type: floats add; 16-bit floats add in fp32 and round once to nearest even,
// as NCCL reduces them (the ring all-reduce, the sum of a tied weight's two 16-bit gradients).
// The array forms are what reductions run (MPI's 16-bit user sum, the ring's partial sums,
// 16-bit main gradients): bit-identical to the scalar ones, vectorised where the CPU allows
// (rounded_sum.cpp). Leaves out the conversions themselves (bf16.hpp, fp16.hpp).
#pragma once

#include <cstdint>

#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb {

inline float rounded_sum(float a, float b) { return a + b; }
inline bf16 rounded_sum(bf16 a, bf16 b) { return to_bf16(to_float(a) + to_float(b)); }
inline fp16 rounded_sum(fp16 a, fp16 b) { return to_fp16(to_float(a) + to_float(b)); }

// into[i] = rounded_sum(into[i], add[i]) for i < n (sum order does not change the bits). The
// arrays must not overlap.
void add_rounded(float* into, const float* add, std::int64_t n);
void add_rounded(bf16* into, const bf16* add, std::int64_t n);
void add_rounded(fp16* into, const fp16* add, std::int64_t n);

}  // namespace sb
