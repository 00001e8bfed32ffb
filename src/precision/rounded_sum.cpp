// SPDX-License-Identifier: Apache-2.0
// Array sums of 16-bit floats. bf16 and float: one loop over the scalar functions (integer
// selects GCC vectorises), compiled for AVX-512, AVX2 and the baseline, the loader picking one
// (GCC function multi-versioning). fp16: the F16C conversions around an fp32 add where the CPU
// has them, eight at a time; a block whose sum is NaN goes the portable way, so NaN payloads come
// out as the scalar functions make them.
#include "precision/rounded_sum.hpp"

#include "core/cpu_isa.hpp"
#include "precision/rounded_sum_paths.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sb {

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SB_SUM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SB_SUM_CLONES
#endif

template <class T>
SB_SUM_CLONES void add_rounded_portable(T* __restrict into, const T* __restrict add, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) into[i] = rounded_sum(into[i], add[i]);
}

}  // namespace

void add_rounded_fp16_portable(fp16* into, const fp16* add, std::int64_t n) { add_rounded_portable(into, add, n); }

#if defined(__x86_64__)
__attribute__((target("avx2,f16c"))) void add_rounded_fp16_f16c(fp16* into, const fp16* add, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(into + i)));
    const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(add + i)));
    const __m256 sum = _mm256_add_ps(a, b);
    if (_mm256_movemask_ps(_mm256_cmp_ps(sum, sum, _CMP_UNORD_Q)) != 0) {
      add_rounded_portable(into + i, add + i, 8);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(into + i), _mm256_cvtps_ph(sum, _MM_FROUND_TO_NEAREST_INT));
  }
  add_rounded_portable(into + i, add + i, n - i);
}
#else
void add_rounded_fp16_f16c(fp16* into, const fp16* add, std::int64_t n) { add_rounded_portable(into, add, n); }
#endif

void add_rounded(float* into, const float* add, std::int64_t n) { add_rounded_portable(into, add, n); }

void add_rounded(bf16* into, const bf16* add, std::int64_t n) { add_rounded_portable(into, add, n); }

void add_rounded(fp16* into, const fp16* add, std::int64_t n) {
#if defined(__x86_64__)
  if (cpu_has_f16c()) return add_rounded_fp16_f16c(into, add, n);
#endif
  add_rounded_fp16_portable(into, add, n);
}

}  // namespace sb
