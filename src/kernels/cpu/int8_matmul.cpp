// SPDX-License-Identifier: Apache-2.0
// int8 inference kernels on the host: quantisation over Kokkos chunks, and the int8 GEMM as
// register tiles of 2 rows × 4 output channels over operands widened to int16 once, so that
// GCC turns the int32 sums into vpmaddwd (AVX2 clone; baseline clone beside it). Bit-identical
// to the reference: integer sums are exact and the dequantisation is the same fma. Where oneDNN
// has VNNI or AMX-INT8 instructions the sums come from its matmul instead
// (onednn_int8_matmul.hpp), dequantised by the same fma; this kernel is the fallback below them.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/int8_dequantise.hpp"
#include "kernels/cpu/onednn_int8_matmul.hpp"

namespace sb::kernels::cpu {

namespace {

// Rows of inp per task: their int16 copy (32 × C × 2 bytes, 36 KiB at C = 576) stays in L2
// while every output channel passes over it.
constexpr i64 kRowBlock = 32;

SB_CPU_VECTOR_CLONES
void quantize_chunk(std::int8_t* out, const float* inp, float scale, i64 n) {
  for (i64 i = 0; i < n; ++i) {
    const float q = std::nearbyint(inp[i] / scale);
    out[i] = static_cast<std::int8_t>(std::clamp(q, -127.0f, 127.0f));
  }
}

SB_CPU_VECTOR_CLONES
void widen(std::int16_t* out, const std::int8_t* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) out[i] = inp[i];
}

// acc (2,4) = a rows (2,C) · w rows (4,C)^T, int16 operands, int32 sums.
SB_CPU_VECTOR_CLONES
void tile_2x4(std::int32_t* acc, const std::int16_t* __restrict a0, const std::int16_t* __restrict a1,
              const std::int16_t* __restrict w0, const std::int16_t* __restrict w1,
              const std::int16_t* __restrict w2, const std::int16_t* __restrict w3, i64 C) {
  std::int32_t s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
  for (i64 c = 0; c < C; ++c) {
    s00 += a0[c] * w0[c];
    s01 += a0[c] * w1[c];
    s02 += a0[c] * w2[c];
    s03 += a0[c] * w3[c];
    s10 += a1[c] * w0[c];
    s11 += a1[c] * w1[c];
    s12 += a1[c] * w2[c];
    s13 += a1[c] * w3[c];
  }
  acc[0] = s00, acc[1] = s01, acc[2] = s02, acc[3] = s03;
  acc[4] = s10, acc[5] = s11, acc[6] = s12, acc[7] = s13;
}

// The reference's dequantisation of output channel o's int32 sum, whichever kernel summed it.
inline float dequantised(std::int32_t sum, float inp_scale, const float* weight_scale, const float* bias, i64 o) {
  return std::fma(static_cast<float>(sum), inp_scale * weight_scale[o], bias ? bias[o] : 0.0f);
}

// The edges: one row · one output channel.
SB_CPU_VECTOR_CLONES
std::int32_t dot(const std::int16_t* __restrict a, const std::int16_t* __restrict w, i64 C) {
  std::int32_t s = 0;
  for (i64 c = 0; c < C; ++c) s += a[c] * w[c];
  return s;
}

}  // namespace

SB_DECLARE_QUANTIZE_INT8 {
  parallel_for_chunks("sb::quantize_int8", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    quantize_chunk(out + begin, inp + begin, scale, end - begin);
  });
}

SB_DECLARE_INT8_MATMUL_FORWARD {
  if (BT == 0 || OC == 0) return;
  if (C > 0) {  // oneDNN's VNNI or AMX sums where it has them, dequantised as below
    thread_local std::vector<std::int32_t> sums;
    if (static_cast<i64>(sums.size()) < BT * OC) sums.resize(static_cast<std::size_t>(BT * OC));
    std::int32_t* acc = sums.data();
    if (onednn_int8_sums(acc, inp, weight, BT, C, OC)) {
      dequantise_rows(out, acc, inp_scale, weight_scale, bias, BT, OC);
      return;
    }
  }
  std::vector<std::int16_t> weight16(static_cast<std::size_t>(OC * C));  // (OC,C)
  std::int16_t* w16 = weight16.data();
  parallel_for_each("sb::int8_matmul_forward::widen", OC,
                    [=](i64 o) { widen(w16 + o * C, weight + o * C, C); });
  const i64 blocks = (BT + kRowBlock - 1) / kRowBlock;
  parallel_for_each("sb::int8_matmul_forward", blocks, [=](i64 block) {
    const i64 r0 = block * kRowBlock;
    const i64 rows = std::min(kRowBlock, BT - r0);
    thread_local std::vector<std::int16_t> scratch;
    if (static_cast<i64>(scratch.size()) < rows * C) scratch.resize(static_cast<std::size_t>(rows * C));
    std::int16_t* a16 = scratch.data();  // (rows,C)
    widen(a16, inp + r0 * C, rows * C);
    auto store = [=](i64 r, i64 o, std::int32_t sum) {
      out[(r0 + r) * OC + o] = dequantised(sum, inp_scale, weight_scale, bias, o);
    };
    const i64 rows2 = rows - rows % 2, oc4 = OC - OC % 4;
    for (i64 r = 0; r < rows2; r += 2) {
      const std::int16_t* a0 = a16 + r * C;
      const std::int16_t* a1 = a0 + C;
      for (i64 o = 0; o < oc4; o += 4) {
        std::int32_t acc[8];
        const std::int16_t* w0 = w16 + o * C;
        tile_2x4(acc, a0, a1, w0, w0 + C, w0 + 2 * C, w0 + 3 * C, C);
        for (i64 j = 0; j < 4; ++j) {
          store(r, o + j, acc[j]);
          store(r + 1, o + j, acc[4 + j]);
        }
      }
      for (i64 o = oc4; o < OC; ++o) {
        store(r, o, dot(a0, w16 + o * C, C));
        store(r + 1, o, dot(a1, w16 + o * C, C));
      }
    }
    for (i64 r = rows2; r < rows; ++r)
      for (i64 o = 0; o < OC; ++o) store(r, o, dot(a16 + r * C, w16 + o * C, C));
  });
}

}  // namespace sb::kernels::cpu
