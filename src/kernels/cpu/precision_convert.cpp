// SPDX-License-Identifier: Apache-2.0
// float <-> bf16/fp16 conversions with Kokkos over chunks. bf16: one loop over the functions of
// precision/bf16.hpp (integer selects on the bit patterns, which GCC vectorises; built for AVX2
// and the baseline). fp16: the F16C instructions where the CPU has them, the portable loop of
// precision/fp16.hpp otherwise, 16 values an instruction where it has AVX-512
// (fp16_conversion_paths.hpp). Bit-identical to the reference,
// NaN payloads included.
#include <algorithm>

#include "core/cpu_isa.hpp"
#include "kernels/cpu/avx512_lanes.hpp"
#include "kernels/cpu/fp16_conversion_paths.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

}  // namespace

SB_CPU_VECTOR_CLONES
void f32_to_fp16_portable(fp16* out, const float* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) out[i] = to_fp16(inp[i]);
}

SB_CPU_VECTOR_CLONES
void fp16_to_f32_portable(float* out, const fp16* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) out[i] = to_float(inp[i]);
}

#if defined(__x86_64__)

// Eight floats at a time; a block with a NaN (|x| above infinity's bits) goes the portable way.
// The last, partial block is converted in a zero-padded copy, so short rows (a 7x7 image's 49
// values) pay one block, not the portable code's cost per value.
__attribute__((target("avx2,f16c"))) inline void f32_to_fp16_block(fp16* out, const float* inp) {
  const __m256i magnitude_mask = _mm256_set1_epi32(0x7FFFFFFF), infinity = _mm256_set1_epi32(0x7F800000);
  const __m256 x = _mm256_loadu_ps(inp);
  const __m256i magnitude = _mm256_and_si256(_mm256_castps_si256(x), magnitude_mask);
  if (!_mm256_testz_si256(_mm256_cmpgt_epi32(magnitude, infinity), _mm256_set1_epi32(-1))) {
    f32_to_fp16_portable(out, inp, 8);
    return;
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("avx2,f16c"))) void f32_to_fp16_f16c(fp16* out, const float* inp, i64 n) {
  i64 i = 0;
  for (; i + 8 <= n; i += 8) f32_to_fp16_block(out + i, inp + i);
  if (i == n) return;
  float padded[8] = {};
  fp16 converted[8];
  std::copy(inp + i, inp + n, padded);
  f32_to_fp16_block(converted, padded);
  std::copy(converted, converted + (n - i), out + i);
}

// Eight halves at a time; a block with a NaN (exponent all ones, mantissa not zero) goes the
// portable way; the last, partial block in a zero-padded copy.
__attribute__((target("avx2,f16c"))) inline void fp16_to_f32_block(float* out, const fp16* inp) {
  const __m128i magnitude_mask = _mm_set1_epi16(0x7FFF), infinity = _mm_set1_epi16(0x7C00);
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(inp));
  if (!_mm_testz_si128(_mm_cmpgt_epi16(_mm_and_si128(h, magnitude_mask), infinity), _mm_set1_epi16(-1))) {
    fp16_to_f32_portable(out, inp, 8);
    return;
  }
  _mm256_storeu_ps(out, _mm256_cvtph_ps(h));
}

__attribute__((target("avx2,f16c"))) void fp16_to_f32_f16c(float* out, const fp16* inp, i64 n) {
  i64 i = 0;
  for (; i + 8 <= n; i += 8) fp16_to_f32_block(out + i, inp + i);
  if (i == n) return;
  fp16 padded[8] = {};
  float converted[8];
  std::copy(inp + i, inp + n, padded);
  fp16_to_f32_block(converted, padded);
  std::copy(converted, converted + (n - i), out + i);
}
// Sixteen values at a time, the last block masked (cpu/avx512_lanes.hpp). Narrowing: a vector
// with a NaN by the definition's code; widening: a block with a NaN the portable way.
SB_AVX512_TARGET void f32_to_fp16_avx512(fp16* out, const float* inp, i64 n) {
  for (i64 i = 0; i < n; i += 16) {
    const __mmask16 mask = first_lanes(n - i);
    store_narrowed(out + i, _mm512_maskz_loadu_ps(mask, inp + i), mask);
  }
}

SB_AVX512_TARGET void fp16_to_f32_avx512(float* out, const fp16* inp, i64 n) {
  const __m256i magnitude_mask = _mm256_set1_epi16(0x7FFF), infinity = _mm256_set1_epi16(0x7C00);
  for (i64 i = 0; i < n; i += 16) {
    const __mmask16 mask = first_lanes(n - i);
    const __m256i h = _mm256_maskz_loadu_epi16(mask, inp + i);
    if (_mm256_mask_cmpgt_epi16_mask(mask, _mm256_and_si256(h, magnitude_mask), infinity) != 0) {
      fp16_to_f32_portable(out + i, inp + i, std::min<i64>(16, n - i));
      continue;
    }
    _mm512_mask_storeu_ps(out + i, mask, _mm512_maskz_cvtph_ps(mask, h));
  }
}

SB_AVX512_TARGET void fp16_rows_to_f32_avx512(float* out, const fp16* inp, i64 ld, i64 rows, i64 n) {
  for (i64 r = 0; r < rows; ++r) fp16_to_f32_avx512(out + r * n, inp + r * ld, n);
}

SB_AVX512_TARGET void f32_rows_to_fp16_avx512(fp16* out, i64 ld, const float* inp, i64 rows, i64 n) {
  for (i64 r = 0; r < rows; ++r) f32_to_fp16_avx512(out + r * ld, inp + r * n, n);
}
#else
void f32_to_fp16_f16c(fp16* out, const float* inp, i64 n) { f32_to_fp16_portable(out, inp, n); }
void fp16_to_f32_f16c(float* out, const fp16* inp, i64 n) { fp16_to_f32_portable(out, inp, n); }
void f32_to_fp16_avx512(fp16* out, const float* inp, i64 n) { f32_to_fp16_portable(out, inp, n); }
void fp16_to_f32_avx512(float* out, const fp16* inp, i64 n) { fp16_to_f32_portable(out, inp, n); }
void fp16_rows_to_f32_avx512(float* out, const fp16* inp, i64 ld, i64 rows, i64 n) {
  for (i64 r = 0; r < rows; ++r) fp16_to_f32_portable(out + r * n, inp + r * ld, n);
}
void f32_rows_to_fp16_avx512(fp16* out, i64 ld, const float* inp, i64 rows, i64 n) {
  for (i64 r = 0; r < rows; ++r) f32_to_fp16_portable(out + r * ld, inp + r * n, n);
}
#endif

NarrowToFp16 fp16_narrowing() {
  if (sb::cpu_has_avx512()) return &f32_to_fp16_avx512;
  return sb::cpu_has_f16c() ? &f32_to_fp16_f16c : &f32_to_fp16_portable;
}
WidenFp16 fp16_widening() {
  if (sb::cpu_has_avx512()) return &fp16_to_f32_avx512;
  return sb::cpu_has_f16c() ? &fp16_to_f32_f16c : &fp16_to_f32_portable;
}

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
  static const NarrowToFp16 chunk = fp16_narrowing();
  parallel_for_chunks("sb::convert_f32_to_fp16", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    chunk(out + begin, inp + begin, end - begin);
  });
}

SB_DECLARE_CONVERT_FP16_TO_F32 {
  static const WidenFp16 chunk = fp16_widening();
  parallel_for_chunks("sb::convert_fp16_to_f32", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    chunk(out + begin, inp + begin, end - begin);
  });
}

}  // namespace sb::kernels::cpu
