// SPDX-License-Identifier: Apache-2.0
// The two ways the cpu back-end converts between float and fp16, chunk by chunk: the portable
// integer code of precision/fp16.hpp (the definition), and the x86 F16C instructions (vcvtps2ph
// with round-to-nearest-even, vcvtph2ps), eight values at a time, or sixteen with AVX-512 (the
// last block masked), which give the same bits for
// every input: a block holding a NaN is converted by the portable code, so NaN payloads follow
// the definition whatever the instructions do with signalling ones. The kernels take F16C where
// the CPU reports it, the AVX-512 forms where it has those (precision_convert.cpp,
// context.fp16_convert); tests hold every path this CPU runs against the reference.
#pragma once

#include <cstdint>

#include "precision/fp16.hpp"

namespace sb::kernels::cpu {

void f32_to_fp16_portable(fp16* out, const float* inp, std::int64_t n);
void fp16_to_f32_portable(float* out, const fp16* inp, std::int64_t n);
// Only where sb::cpu_has_f16c() (core/cpu_isa.hpp).
void f32_to_fp16_f16c(fp16* out, const float* inp, std::int64_t n);
void fp16_to_f32_f16c(float* out, const fp16* inp, std::int64_t n);
// Only where sb::cpu_has_avx512().
void f32_to_fp16_avx512(fp16* out, const float* inp, std::int64_t n);
void fp16_to_f32_avx512(float* out, const fp16* inp, std::int64_t n);
// `rows` rows of n values, `ld` apart in the fp16 array and back to back in the float one, in one
// call (a head of attention: 64 rows of 16 values).
void fp16_rows_to_f32_avx512(float* out, const fp16* inp, std::int64_t ld, std::int64_t rows, std::int64_t n);
void f32_rows_to_fp16_avx512(fp16* out, std::int64_t ld, const float* inp, std::int64_t rows, std::int64_t n);

// The fastest of them this CPU runs (the kernels' choice).
using NarrowToFp16 = void (*)(fp16*, const float*, std::int64_t);
using WidenFp16 = void (*)(float*, const fp16*, std::int64_t);
NarrowToFp16 fp16_narrowing();
WidenFp16 fp16_widening();

}  // namespace sb::kernels::cpu
