// SPDX-License-Identifier: Apache-2.0
// Tiles of 16 pixels × 16 channels: a tile read pixel by pixel (contiguous in the blocked
// layout) is transposed through a small buffer, then added channel by channel (contiguous in
// NCHW), so both sides are read and written in whole vectors. One task an (image, channel
// block); the result of an element does not depend on the tile or the thread that made it.
#include "kernels/cpu/blocked_channels_add.hpp"

#include <algorithm>

#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/storage_values.hpp"

namespace sb::kernels::cpu {

namespace {

// One image's channel block: rows[j] (HW values of channel j, j < width) += block[hw][j].
template <class S>
[[gnu::always_inline]] inline void add_block_of(S* rows, const float* block, i64 width, i64 HW) {
  float tile[kChannelBlock][kChannelBlock];  // [channel][pixel]
  for (i64 p0 = 0; p0 < HW; p0 += kChannelBlock) {
    const i64 pixels = std::min(kChannelBlock, HW - p0);
    for (i64 p = 0; p < pixels; ++p)
      for (i64 j = 0; j < kChannelBlock; ++j) tile[j][p] = block[(p0 + p) * kChannelBlock + j];
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

template <class S>
void add_all(S* dst, const float* src, i64 N, i64 C, i64 HW) {
  const i64 blocks = (C + kChannelBlock - 1) / kChannelBlock;
  parallel_for_each("sb::add_blocked_channels", N * blocks, [=](i64 task) {
    const i64 n = task / blocks, b = task % blocks, c0 = b * kChannelBlock;
    add_block(dst + (n * C + c0) * HW, src + task * HW * kChannelBlock, std::min(kChannelBlock, C - c0), HW);
  });
}

}  // namespace

void add_blocked_channels(float* dst, const float* src, i64 N, i64 C, i64 HW) { add_all(dst, src, N, C, HW); }
void add_blocked_channels(bf16* dst, const float* src, i64 N, i64 C, i64 HW) { add_all(dst, src, N, C, HW); }

}  // namespace sb::kernels::cpu
