// SPDX-License-Identifier: Apache-2.0
// fp16 split into bf16 pairs (kernels/cpu/split_fp16.hpp), what the fp16 linear layer's AMX path
// multiplies: every fp16 value is hi + lo exactly; the AVX512-BF16 rows give the definition's bits
// in both orders and both layouts, tails included; a CPU without AVX512-BF16 is refused. The
// GEMMs over the parts are held against the reference in test_packed_matmul.cpp (StorageKernels'
// path) and test_onednn_bf16_matmul.cpp (the class itself, wherever oneDNN runs bf16).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/check.hpp"
#include "core/cpu_isa.hpp"
#include "kernels/cpu/split_fp16.hpp"

namespace sb::kernels::testing {
namespace {

using cpu::SplitOrder;

fp16 fp16_of_bits(std::uint32_t bits) { return fp16::from_bits(static_cast<std::uint16_t>(bits)); }

TEST(SplitFp16, EveryFiniteValueIsHiPlusLoExactly) {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const fp16 x = fp16_of_bits(bits);
    const float value = to_float(x);
    const cpu::Bf16Parts parts = cpu::split_to_bf16(x);
    if (!std::isfinite(value)) {
      EXPECT_FALSE(std::isfinite(to_float(parts.hi) + to_float(parts.lo))) << bits;
      continue;
    }
    const double hi = to_float(parts.hi), lo = to_float(parts.lo);
    ASSERT_EQ(hi + lo, static_cast<double>(value)) << "bits " << bits;
    ASSERT_EQ(to_float(to_bf16(value)), hi) << "hi is x rounded to bf16, bits " << bits;
    ASSERT_LE(std::fabs(lo), std::ldexp(std::fabs(value), -8)) << "lo within 2^-8 of x, bits " << bits;
  }
}

// All 65,536 bit patterns laid out in rows of every width 1..40 (so every tail length), split in
// both orders side by side and stacked, against split_to_bf16 (NaN lanes: NaN).
TEST(SplitFp16, RowsEqualTheDefinitionInEveryLayout) {
  std::vector<fp16> all(0x10000);
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) all[bits] = fp16_of_bits(bits);
  if (!cpu_has_avx512_bf16()) {
    std::vector<bf16> out(3 * all.size());
    EXPECT_THROW(cpu::split_fp16_rows(out.data(), all.data(), 1, 16, 48, 16, SplitOrder::hi_hi_lo), Error);
    return;
  }
  for (i64 cols = 1; cols <= 40; ++cols) {
    const i64 rows = static_cast<i64>(all.size()) / cols;
    for (const bool stacked : {false, true}) {
      for (const SplitOrder order : {SplitOrder::hi_hi_lo, SplitOrder::hi_lo_hi}) {
        const i64 row_stride = stacked ? cols : 3 * cols, copy_offset = stacked ? rows * cols : cols;
        std::vector<bf16> out(static_cast<std::size_t>(3 * rows * cols), bf16::from_bits(0x1234));
        cpu::split_fp16_rows(out.data(), all.data(), rows, cols, row_stride, copy_offset, order);
        for (i64 r = 0; r < rows; ++r) {
          for (i64 j = 0; j < cols; ++j) {
            const cpu::Bf16Parts parts = cpu::split_to_bf16(all[r * cols + j]);
            const bf16 expected[3] = {parts.hi, order == SplitOrder::hi_lo_hi ? parts.lo : parts.hi,
                                      order == SplitOrder::hi_lo_hi ? parts.hi : parts.lo};
            for (int p = 0; p < 3; ++p) {
              const bf16 got = out[p * copy_offset + r * row_stride + j];
              const bool both_nan = std::isnan(to_float(got)) && std::isnan(to_float(expected[p]));
              ASSERT_TRUE(both_nan || got.bits == expected[p].bits)
                  << "cols " << cols << " stacked " << stacked << " row " << r << " col " << j << " copy " << p
                  << ": " << got.bits << " != " << expected[p].bits;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace sb::kernels::testing
