// SPDX-License-Identifier: Apache-2.0
// cpu sparse × dense product: tiles of the P columns spread over the host threads, each nonzero
// adding a scaled input row segment to its output row segment, the inner loop contiguous
// (8-wide with AVX2). Leaves out register blocking over several output rows.
#include <algorithm>

#include "kernels/cpu/host_parallel.hpp"
#include "kernels/sparse_kernels.hpp"

namespace sb::kernels::cpu {

namespace {

SB_CPU_VECTOR_CLONES
void add_scaled_row(float* __restrict out, const float* __restrict inp, float value, i64 P) {
  for (i64 p = 0; p < P; ++p) out[p] += value * inp[p];
}

}  // namespace

SB_DECLARE_CSR_MATMUL_FORWARD {
  (void)K;
  if (OC == 0 || P == 0) return;
  // Tiles of the columns spread over the threads: a tile's input rows (K, kTile) stay in the
  // L2 cache while every output row reads them; each element keeps the reference's order.
  constexpr i64 kTile = 256;
  const i64 tiles = (P + kTile - 1) / kTile;
  parallel_for_each("sb::csr_matmul_forward", tiles, [=](i64 tile) {
    const i64 p0 = tile * kTile, width = std::min(kTile, P - p0);
    for (i64 o = 0; o < OC; ++o) {
      float* row = out + o * P + p0;
      std::fill(row, row + width, bias ? bias[o] : 0.0f);
      for (std::int32_t j = row_start[o]; j < row_start[o + 1]; ++j)
        add_scaled_row(row, inp + col[j] * P + p0, values[j], width);
    }
  });
}

}  // namespace sb::kernels::cpu
