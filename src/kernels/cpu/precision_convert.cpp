// SPDX-License-Identifier: Apache-2.0
// float <-> bf16/fp16 conversions with Kokkos over chunks, each chunk one loop over the functions
// of precision/bf16.hpp and precision/fp16.hpp (integer selects on the bit patterns, which GCC
// vectorises; built for AVX2 and the baseline). Bit-identical to the reference.
// Leaves out the F16C/AVX512-BF16 conversion instructions: the portable integer code is the one
// definition of rounding, and NaN payloads come out the same on every machine.
#include "kernels/cpu/host_parallel.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::cpu {

namespace {

SB_CPU_VECTOR_CLONES
void f32_to_bf16_chunk(bf16* out, const float* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) out[i] = to_bf16(inp[i]);
}

SB_CPU_VECTOR_CLONES
void bf16_to_f32_chunk(float* out, const bf16* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) out[i] = to_float(inp[i]);
}

SB_CPU_VECTOR_CLONES
void f32_to_fp16_chunk(fp16* out, const float* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) out[i] = to_fp16(inp[i]);
}

SB_CPU_VECTOR_CLONES
void fp16_to_f32_chunk(float* out, const fp16* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) out[i] = to_float(inp[i]);
}

}  // namespace

SB_DECLARE_CONVERT_F32_TO_BF16 {
  parallel_for_chunks("sb::convert_f32_to_bf16", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    f32_to_bf16_chunk(out + begin, inp + begin, end - begin);
  });
}

SB_DECLARE_CONVERT_BF16_TO_F32 {
  parallel_for_chunks("sb::convert_bf16_to_f32", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    bf16_to_f32_chunk(out + begin, inp + begin, end - begin);
  });
}

SB_DECLARE_CONVERT_F32_TO_FP16 {
  parallel_for_chunks("sb::convert_f32_to_fp16", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    f32_to_fp16_chunk(out + begin, inp + begin, end - begin);
  });
}

SB_DECLARE_CONVERT_FP16_TO_F32 {
  parallel_for_chunks("sb::convert_fp16_to_f32", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    fp16_to_f32_chunk(out + begin, inp + begin, end - begin);
  });
}

}  // namespace sb::kernels::cpu
