// SPDX-License-Identifier: Apache-2.0
// Tiles of 16 pixels × 16 channels: a tile read pixel by pixel (contiguous in the blocked
// layout) is transposed (in 16 registers with AVX-512, else in 8 × 8 AVX quarters through a
// small buffer) and written channel by channel (contiguous in NCHW), or the other way round, so
// both sides are read and written in whole vectors; an fp16 block's channel rows are widened or
// narrowed in registers with AVX-512, else whole in the thread's scratch (cpu/fp16_rows.hpp). One task an (image, channel block); the result of an element does not depend on the
// tile or the thread that made it.
#include "kernels/cpu/blocked_channels_add.hpp"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/cpu_isa.hpp"
#include "kernels/cpu/avx512_lanes.hpp"
#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/storage_values.hpp"

namespace sb::kernels::cpu {

namespace {

using Tile = float[kChannelBlock][kChannelBlock];  // [channel][pixel]

// dst[i·dst_stride + j] = src[j·src_stride + i], i, j < 8.
void transpose_8x8_portable(float* dst, i64 dst_stride, const float* src, i64 src_stride) {
  for (i64 i = 0; i < 8; ++i)
    for (i64 j = 0; j < 8; ++j) dst[i * dst_stride + j] = src[j * src_stride + i];
}

#if defined(__x86_64__)
// The same in AVX registers: pairs unpacked, quads shuffled, halves exchanged.
__attribute__((target("avx2"))) void transpose_8x8_avx(float* dst, i64 dst_stride, const float* src,
                                                        i64 src_stride) {
  __m256 r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_stride);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dst_stride, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_stride, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}
#endif

void transpose_8x8(float* dst, i64 dst_stride, const float* src, i64 src_stride) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return transpose_8x8_avx(dst, dst_stride, src, src_stride);
#endif
  transpose_8x8_portable(dst, dst_stride, src, src_stride);
}

#if defined(__x86_64__)
constexpr __mmask16 kAll = 0xFFFF;  // the zero-masking forms: GCC 12 warns of the others' undefined inputs

// r[i][j] -> r[j][i] for a 16 × 16 tile in 16 registers: pairs unpacked and quads shuffled within
// each 128-bit lane (a 4 × 4 transpose per lane), then the 4 × 4 grid of lanes transposed.
SB_AVX512_TARGET inline void transpose_in_registers(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_maskz_unpacklo_ps(kAll, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[i], r[i + 1]);
  }
  for (int g = 0; g < 16; g += 4) {  // r[g + k], lane L: column 4L + k of rows g .. g + 3
    r[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
    r[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xEE);
    r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
    r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    const __m512 a0 = _mm512_maskz_shuffle_f32x4(kAll, r[k], r[4 + k], 0x44), a1 = _mm512_maskz_shuffle_f32x4(kAll, r[k], r[4 + k], 0xEE);
    const __m512 a2 = _mm512_maskz_shuffle_f32x4(kAll, r[8 + k], r[12 + k], 0x44);
    const __m512 a3 = _mm512_maskz_shuffle_f32x4(kAll, r[8 + k], r[12 + k], 0xEE);
    t[k] = _mm512_maskz_shuffle_f32x4(kAll, a0, a2, 0x88);
    t[4 + k] = _mm512_maskz_shuffle_f32x4(kAll, a0, a2, 0xDD);
    t[8 + k] = _mm512_maskz_shuffle_f32x4(kAll, a1, a3, 0x88);
    t[12 + k] = _mm512_maskz_shuffle_f32x4(kAll, a1, a3, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

SB_AVX512_TARGET void transpose_16x16_avx512(float* dst, i64 dst_stride, const float* src, i64 src_stride) {
  __m512 r[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * src_stride);
  transpose_in_registers(r);
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + i * dst_stride, r[i]);
}

#endif

// dst (16 × 16, dst_stride) = the transpose of src (16 × 16, src_stride): in registers with
// AVX-512, else in 8 × 8 quarters.
void transpose_16x16(float* dst, i64 dst_stride, const float* src, i64 src_stride) {
#if defined(__x86_64__)
  if (avx512_kernels_run()) return transpose_16x16_avx512(dst, dst_stride, src, src_stride);
#endif
  for (i64 a = 0; a < 16; a += 8)
    for (i64 b = 0; b < 16; b += 8)
      transpose_8x8(dst + a * dst_stride + b, dst_stride, src + b * src_stride + a, src_stride);
}

// tile[j][p] = block[p0 + p][j], p < pixels.
[[gnu::always_inline]] inline void load_tile(Tile& tile, const float* block, i64 p0, i64 pixels) {
  if (pixels == kChannelBlock)
    return transpose_16x16(&tile[0][0], kChannelBlock, block + p0 * kChannelBlock, kChannelBlock);
  for (i64 p = 0; p < pixels; ++p)
    for (i64 j = 0; j < kChannelBlock; ++j) tile[j][p] = block[(p0 + p) * kChannelBlock + j];
}

// One image's channel block: rows[j] (HW values of channel j, j < width) += block[hw][j].
template <class S>
[[gnu::always_inline]] inline void add_block_of(S* rows, const float* block, i64 width, i64 HW) {
  Tile tile;
  for (i64 p0 = 0; p0 < HW; p0 += kChannelBlock) {
    const i64 pixels = std::min(kChannelBlock, HW - p0);
    load_tile(tile, block, p0, pixels);
    for (i64 j = 0; j < width; ++j) {
      S* row = rows + j * HW + p0;
      for (i64 p = 0; p < pixels; ++p) row[p] = stored<S>(widened(row[p]) + tile[j][p]);
    }
  }
}

SB_CPU_VECTOR_CLONES void add_block(float* rows, const float* block, i64 width, i64 HW) {
  add_block_of(rows, block, width, HW);
}
SB_CPU_VECTOR_CLONES void add_block(bf16* rows, const float* block, i64 width, i64 HW) {
  add_block_of(rows, block, width, HW);
}
#if defined(__x86_64__)
// ---- fp16 tiles on AVX-512: each channel row's 16 pixels widened or narrowed in registers on
// the way through the transpose (a NaN in a vector narrowed by the definition's code, so the
// bits are narrow_to_fp16's; a signalling NaN read comes out quiet, a NaN either way).

// r[p] = pixel p0 + p's 16 channels of the blocked layout (zero past `pixels`), transposed to
// r[j] = channel j's pixels.
SB_AVX512_TARGET inline void load_blocked_tile(__m512 r[16], const float* block, i64 p0, i64 pixels) {
  for (i64 p = 0; p < 16; ++p)
    r[p] = p < pixels ? _mm512_loadu_ps(block + (p0 + p) * kChannelBlock) : _mm512_setzero_ps();
  transpose_in_registers(r);
}

SB_AVX512_TARGET void to_block_avx512(float* block, const fp16* rows, i64 width, i64 HW) {
  for (i64 p0 = 0; p0 < HW; p0 += kChannelBlock) {
    const i64 pixels = std::min(kChannelBlock, HW - p0);
    const __mmask16 mask = first_lanes(pixels);
    __m512 r[16];
    for (i64 j = 0; j < 16; ++j) r[j] = j < width ? widened16(rows + j * HW + p0, mask) : _mm512_setzero_ps();
    transpose_in_registers(r);
    for (i64 p = 0; p < pixels; ++p) _mm512_storeu_ps(block + (p0 + p) * kChannelBlock, r[p]);
  }
}

SB_AVX512_TARGET void from_block_avx512(fp16* rows, const float* block, i64 width, i64 HW) {
  for (i64 p0 = 0; p0 < HW; p0 += kChannelBlock) {
    const i64 pixels = std::min(kChannelBlock, HW - p0);
    __m512 r[16];
    load_blocked_tile(r, block, p0, pixels);
    for (i64 j = 0; j < width; ++j) store_narrowed(rows + j * HW + p0, r[j], first_lanes(pixels));
  }
}

SB_AVX512_TARGET void add_block_avx512(fp16* rows, const float* block, i64 width, i64 HW) {
  for (i64 p0 = 0; p0 < HW; p0 += kChannelBlock) {
    const i64 pixels = std::min(kChannelBlock, HW - p0);
    const __mmask16 mask = first_lanes(pixels);
    __m512 r[16];
    load_blocked_tile(r, block, p0, pixels);
    for (i64 j = 0; j < width; ++j) {
      fp16* row = rows + j * HW + p0;
      store_narrowed(row, _mm512_add_ps(widened16(row, mask), r[j]), mask);
    }
  }
}
#endif

// fp16: the block's channel rows widened whole into the thread's scratch (16 × HW floats), the
// float tiles run there, and the rows narrowed whole; in registers with AVX-512.
void add_block(fp16* rows, const float* block, i64 width, i64 HW) {
#if defined(__x86_64__)
  if (avx512_kernels_run()) return add_block_avx512(rows, block, width, HW);
#endif
  float* wide = thread_scratch(kChannelBlock * HW);
  widen_fp16(wide, rows, width * HW);
  add_block(wide, block, width, HW);
  narrow_to_fp16(rows, wide, width * HW);
}

SB_CPU_VECTOR_CLONES void to_block_of_floats(float* block, const float* rows, i64 width, i64 HW) {
  float tile[kChannelBlock][kChannelBlock] = {};  // [pixel][channel]; channels from width on stay 0
  for (i64 p0 = 0; p0 < HW; p0 += kChannelBlock) {
    const i64 pixels = std::min(kChannelBlock, HW - p0);
    if (pixels == kChannelBlock && width == kChannelBlock) {
      transpose_16x16(block + p0 * kChannelBlock, kChannelBlock, rows + p0, HW);
      continue;
    }
    for (i64 j = 0; j < width; ++j)
      for (i64 p = 0; p < pixels; ++p) tile[p][j] = rows[j * HW + p0 + p];
    for (i64 p = 0; p < pixels; ++p)
      for (i64 j = 0; j < kChannelBlock; ++j) block[(p0 + p) * kChannelBlock + j] = tile[p][j];
  }
}

void to_block(float* block, const fp16* rows, i64 width, i64 HW) {
#if defined(__x86_64__)
  if (avx512_kernels_run()) return to_block_avx512(block, rows, width, HW);
#endif
  float* wide = thread_scratch(kChannelBlock * HW);
  widen_fp16(wide, rows, width * HW);
  to_block_of_floats(block, wide, width, HW);
}

SB_CPU_VECTOR_CLONES void from_block_to_floats(float* rows, const float* block, i64 width, i64 HW) {
  Tile tile;
  for (i64 p0 = 0; p0 < HW; p0 += kChannelBlock) {
    const i64 pixels = std::min(kChannelBlock, HW - p0);
    load_tile(tile, block, p0, pixels);
    for (i64 j = 0; j < width; ++j)
      for (i64 p = 0; p < pixels; ++p) rows[j * HW + p0 + p] = tile[j][p];
  }
}

void from_block(fp16* rows, const float* block, i64 width, i64 HW) {
#if defined(__x86_64__)
  if (avx512_kernels_run()) return from_block_avx512(rows, block, width, HW);
#endif
  float* wide = thread_scratch(kChannelBlock * HW);
  from_block_to_floats(wide, block, width, HW);
  narrow_to_fp16(rows, wide, width * HW);
}

// body(plain rows of the block's channels, the block, its width) for every (image, block).
template <class Body>
void for_each_block(const char* label, i64 N, i64 C, i64 HW, const Body& body) {
  const i64 blocks = (C + kChannelBlock - 1) / kChannelBlock;
  parallel_for_each(label, N * blocks, [=](i64 task) {
    const i64 n = task / blocks, c0 = task % blocks * kChannelBlock;
    body((n * C + c0) * HW, task * HW * kChannelBlock, std::min(kChannelBlock, C - c0));
  });
}

template <class S>
void add_all(S* dst, const float* src, i64 N, i64 C, i64 HW) {
  for_each_block("sb::add_blocked_channels", N, C, HW,
                 [=](i64 plain, i64 blocked, i64 width) { add_block(dst + plain, src + blocked, width, HW); });
}

}  // namespace

void add_blocked_channels(float* dst, const float* src, i64 N, i64 C, i64 HW) { add_all(dst, src, N, C, HW); }
void add_blocked_channels(bf16* dst, const float* src, i64 N, i64 C, i64 HW) { add_all(dst, src, N, C, HW); }
void add_blocked_channels(fp16* dst, const float* src, i64 N, i64 C, i64 HW) { add_all(dst, src, N, C, HW); }

void to_blocked_channels(float* dst, const fp16* src, i64 N, i64 C, i64 HW) {
  for_each_block("sb::to_blocked_channels", N, C, HW,
                 [=](i64 plain, i64 blocked, i64 width) { to_block(dst + blocked, src + plain, width, HW); });
}

void from_blocked_channels(fp16* dst, const float* src, i64 N, i64 C, i64 HW) {
  for_each_block("sb::from_blocked_channels", N, C, HW,
                 [=](i64 plain, i64 blocked, i64 width) { from_block(dst + plain, src + blocked, width, HW); });
}

}  // namespace sb::kernels::cpu
