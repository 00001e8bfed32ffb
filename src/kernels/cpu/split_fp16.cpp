// SPDX-License-Identifier: Apache-2.0
// The fp16 -> bf16 pair split 16 values at a time: widened exactly (vcvtph2ps), rounded to bf16
// (vcvtneps2bf16, nearest even; fp16's values are normal in fp32, so its flushing of subnormals
// never acts), and the exact remainder rounded likewise. Rows run side by side on the threads.
#include "kernels/cpu/split_fp16.hpp"

#include "core/check.hpp"
#include "core/cpu_isa.hpp"
#include "kernels/cpu/avx512_lanes.hpp"
#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

Bf16Parts split_to_bf16(fp16 x) {
  const float value = to_float(x);
  const bf16 hi = to_bf16(value);
  const float hi_value = to_float(hi);
  return {hi, to_bf16(value - hi_value)};
}

namespace {

#if defined(__x86_64__)
#define SB_SPLIT_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,f16c,fma")))

SB_SPLIT_TARGET void split_row(bf16* out, const fp16* x, i64 cols, i64 copy_offset, SplitOrder order) {
  for (i64 j = 0; j < cols; j += 16) {
    const __mmask16 mask = first_lanes(cols - j);
    const __m512 value = widened16(x + j, mask);
    const __m256i hi = reinterpret_cast<__m256i>(_mm512_maskz_cvtneps_pbh(mask, value));
    const __m512 hi_value = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(mask, _mm512_maskz_cvtepu16_epi32(mask, hi), 16));
    const __m256i lo = reinterpret_cast<__m256i>(_mm512_maskz_cvtneps_pbh(mask, _mm512_maskz_sub_ps(mask, value, hi_value)));
    const bool lo_first = order == SplitOrder::hi_lo_hi;
    _mm256_mask_storeu_epi16(out + j, mask, hi);
    _mm256_mask_storeu_epi16(out + copy_offset + j, mask, lo_first ? lo : hi);
    _mm256_mask_storeu_epi16(out + 2 * copy_offset + j, mask, lo_first ? hi : lo);
  }
}
#endif

}  // namespace

void split_fp16_rows(bf16* out, const fp16* x, i64 rows, i64 cols, i64 out_row_stride, i64 copy_offset,
                     SplitOrder order) {
#if defined(__x86_64__)
  SB_CHECK(cpu_has_avx512_bf16(), "split_fp16_rows: needs AVX512-BF16, which this CPU does not report");
  parallel_for_each("sb::split_fp16_rows", rows, [=](i64 r) {
    split_row(out + r * out_row_stride, x + r * cols, cols, copy_offset, order);
  });
#else
  SB_CHECK(false, "split_fp16_rows: x86-64 only (rows={}, cols={}, out_row_stride={}, copy_offset={}, order={})",
           rows, cols, out_row_stride, copy_offset, static_cast<int>(order));
#endif
}

}  // namespace sb::kernels::cpu
