// SPDX-License-Identifier: Apache-2.0
// Sixteen 16-bit values in one AVX-512 register and back, for the cpu kernels' own AVX-512 code
// (packed_matmul.cpp, blocked_channels_add.cpp, precision_convert.cpp): the first n lanes as a
// mask, bf16 and fp16 widened and narrowed with round-to-nearest-even. The zero-masking forms
// throughout (GCC 12 warns of the unmasked ones' undefined inputs). Only for functions compiled
// with SB_AVX512_TARGET, called where sb::cpu_has_avx512() (core/cpu_isa.hpp). Leaves out
// NaN payloads on widening: a signalling NaN comes out quiet (precision_convert.cpp keeps them).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include "core/cpu_isa.hpp"
#include "kernels/cpu/storage_values.hpp"
#include "kernels/kernels.hpp"

#define SB_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c,fma")))

namespace sb::kernels::cpu {

// Whether the kernels' own AVX-512 paths run here (sb::cpu_runs_avx512_kernels(), read once: it
// follows oneDNN's ISA, so ONEDNN_MAX_CPU_ISA=AVX2 takes the fallbacks the tests hold them against).
inline bool avx512_kernels_run() {
  static const bool run = sb::cpu_runs_avx512_kernels();
  return run;
}

// The first min(n, 16) lanes (n > 0).
SB_AVX512_TARGET inline __mmask16 first_lanes(i64 n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// The masked lanes of p widened, zero elsewhere.
SB_AVX512_TARGET inline __m512 widened16(const fp16* p, __mmask16 mask) {
  return _mm512_maskz_cvtph_ps(mask, _mm256_maskz_loadu_epi16(mask, p));
}
SB_AVX512_TARGET inline __m512 widened16(const bf16* p, __mmask16 mask) {
  const __m512i halves = _mm512_maskz_cvtepu16_epi32(mask, _mm256_maskz_loadu_epi16(mask, p));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(mask, halves, 16));
}

// The sum of v's sixteen lanes, in halves (GCC 12's _mm512_reduce_add_ps and
// _mm512_castps512_ps256 read an undefined register and warn).
SB_AVX512_TARGET inline float lanes_sum(__m512 v) {
  const __m256 lower = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), 0));
  const __m256 upper = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), 1));
  const __m256 eight = _mm256_add_ps(lower, upper);
  const __m128 four = _mm_add_ps(_mm256_castps256_ps128(eight), _mm256_extractf128_ps(eight, 1));
  const __m128 two = _mm_add_ps(four, _mm_movehl_ps(four, four));
  return _mm_cvtss_f32(_mm_add_ss(two, _mm_shuffle_ps(two, two, 1)));
}

// The masked lanes of v rounded to fp16 into p: the instruction, or, where a lane is NaN, the
// definition's code lane by lane (so the bits are precision/fp16.hpp's, payloads included).
SB_AVX512_TARGET inline void store_narrowed(fp16* p, __m512 v, __mmask16 mask) {
  if (_mm512_mask_cmp_ps_mask(mask, v, v, _CMP_UNORD_Q) != 0) {
    float values[16];
    _mm512_storeu_ps(values, v);
    for (int i = 0; i < 16; ++i)
      if ((mask >> i) & 1u) p[i] = stored<fp16>(values[i]);
    return;
  }
  _mm256_mask_storeu_epi16(p, mask, _mm512_maskz_cvtps_ph(mask, v, _MM_FROUND_TO_NEAREST_INT));
}

// The masked lanes of v rounded to bf16 into p with precision/bf16.hpp's integer rounding (nearest
// even, subnormals kept; a NaN keeps its sign and top payload bits, quiet), so the bits are
// to_bf16's.
SB_AVX512_TARGET inline void store_narrowed(bf16* p, __m512 v, __mmask16 mask) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i upper = _mm512_maskz_srli_epi32(mask, bits, 16);
  const __m512i lsb = _mm512_and_si512(upper, _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_maskz_srli_epi32(mask, _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)), lsb), 16);
  const __mmask16 nan = _mm512_mask_cmp_ps_mask(mask, v, v, _CMP_UNORD_Q);
  const __m512i halves = _mm512_mask_or_epi32(rounded, nan, upper, _mm512_set1_epi32(0x0040));
  _mm256_mask_storeu_epi16(p, mask, _mm512_maskz_cvtepi32_epi16(mask, halves));
}

}  // namespace sb::kernels::cpu

#endif
