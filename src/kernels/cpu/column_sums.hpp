// SPDX-License-Identifier: Apache-2.0
// A bias gradient's column sums, shared by the fp32 and the bf16 linear layers: each task owns
// a block of columns and walks all rows in order, so no two tasks write one sum and the order
// of the additions does not depend on the thread count.
#pragma once

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::cpu {

inline constexpr i64 kColumnSumBlock = 64;
// 16-bit rows of a column block widened per call: 64 rows x 64 values, 16 KiB of floats.
inline constexpr i64 kColumnSumRowsWidened = 64;

// sums (OC) += column sums of rows (R, OC), in float; T is float, bf16 or fp16 (a 16-bit block
// of rows widened by fp16_rows.hpp's vector conversions first, one call for kColumnSumRowsWidened
// rows: the same values, so the same sums).
template <class T>
void add_column_sums(const char* label, float* sums, const T* rows, i64 R, i64 OC) {
  const i64 blocks = (OC + kColumnSumBlock - 1) / kColumnSumBlock;
  parallel_for_each(label, blocks, [=](i64 block) {
    const i64 c0 = block * kColumnSumBlock;
    const i64 width = std::min(kColumnSumBlock, OC - c0);
    float sum[kColumnSumBlock] = {};
    if constexpr (std::is_same_v<T, float>) {
      for (i64 r = 0; r < R; ++r) {
        const T* row = rows + r * OC + c0;
        for (i64 j = 0; j < width; ++j) sum[j] += row[j];
      }
    } else {
      float widened[kColumnSumRowsWidened * kColumnSumBlock];
      for (i64 r0 = 0; r0 < R; r0 += kColumnSumRowsWidened) {
        const i64 count = std::min(kColumnSumRowsWidened, R - r0);
        widen_rows(widened, rows + r0 * OC + c0, OC, count, width);
        for (i64 r = 0; r < count; ++r)
          for (i64 j = 0; j < width; ++j) sum[j] += widened[r * width + j];
      }
    }
    for (i64 j = 0; j < width; ++j) sums[c0 + j] += sum[j];
  });
}

}  // namespace sb::kernels::cpu
