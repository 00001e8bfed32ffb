// SPDX-License-Identifier: Apache-2.0
// Tiles of 16 pixels × 16 channels: a tile read pixel by pixel (contiguous in the blocked
// layout) is transposed through a small buffer and written channel by channel (contiguous in
// NCHW), or the other way round, so both sides are read and written in whole vectors; an fp16
// block's channel rows are widened or narrowed whole in the thread's scratch (cpu/fp16_rows.hpp:
// F16C where the CPU has it). One task an (image, channel block); the result of an element does not depend on the
// tile or the thread that made it.
#include "kernels/cpu/blocked_channels_add.hpp"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

// dst (16 × 16, dst_stride) = the transpose of src (16 × 16, src_stride), in 8 × 8 quarters.
void transpose_16x16(float* dst, i64 dst_stride, const float* src, i64 src_stride) {
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
// fp16: the block's channel rows widened whole into the thread's scratch (16 × HW floats), the
// float tiles run there, and the rows narrowed whole.
void add_block(fp16* rows, const float* block, i64 width, i64 HW) {
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
