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

// sums (OC) += column sums of rows (R, OC), in float; T is float, bf16 or fp16 (a 16-bit row's
// block widened by fp16_rows.hpp's vector conversions first: the same values, so the same sums).
template <class T>
void add_column_sums(const char* label, float* sums, const T* rows, i64 R, i64 OC) {
  const i64 blocks = (OC + kColumnSumBlock - 1) / kColumnSumBlock;
  parallel_for_each(label, blocks, [=](i64 block) {
    const i64 c0 = block * kColumnSumBlock;
    const i64 width = std::min(kColumnSumBlock, OC - c0);
    float sum[kColumnSumBlock] = {};
    for (i64 r = 0; r < R; ++r) {
      const T* row = rows + r * OC + c0;
      if constexpr (std::is_same_v<T, float>) {
        for (i64 j = 0; j < width; ++j) sum[j] += row[j];
      } else {
        float widened[kColumnSumBlock];
        widen_values(widened, row, width);
        for (i64 j = 0; j < width; ++j) sum[j] += widened[j];
      }
    }
    for (i64 j = 0; j < width; ++j) sums[c0 + j] += sum[j];
  });
}

}  // namespace sb::kernels::cpu
