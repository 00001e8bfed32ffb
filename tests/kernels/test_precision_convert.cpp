// SPDX-License-Identifier: Apache-2.0
// The cpu float <-> bf16/fp16 conversion kernels, and the AVX-512 lanes' bf16 rounding the
// elementwise kernels store through, equal the reference bit for bit (NaN payloads included) on
// a few million values, at lengths that end inside a chunk; the dispatch tables hold them. Leaves out the rounding rules themselves (tests/precision) and cuda (tests/cuda).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "conversion_inputs.hpp"
#include "core/cpu_isa.hpp"
#include "kernels/cpu/avx512_lanes.hpp"
#include "kernels/cpu/fp16_conversion_paths.hpp"
#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::testing {
namespace {

constexpr i64 kValues = 3'000'017;  // not a multiple of the cpu chunk (8192)

TEST(PrecisionConvert, CpuFloatToBf16EqualsReference) {
  const std::vector<float> inp = conversion_test_floats(kValues);
  std::vector<bf16> expected(inp.size(), bf16{0xDEAD}), actual(inp.size(), bf16{0xBEEF});
  reference::convert_f32_to_bf16(expected.data(), inp.data(), kValues);
  cpu::convert_f32_to_bf16(actual.data(), inp.data(), kValues);
  EXPECT_EQ(first_bit_difference(actual, expected), -1);
}

#if defined(__x86_64__)
// avx512_lanes.hpp's store_narrowed, sixteen lanes a call, the last call masked.
SB_AVX512_TARGET void narrow_in_lanes(bf16* out, const float* inp, i64 n) {
  for (i64 i = 0; i < n; i += 16) {
    const __mmask16 mask = cpu::first_lanes(n - i);
    cpu::store_narrowed(out + i, _mm512_maskz_loadu_ps(mask, inp + i), mask);
  }
}
#endif

// Every bf16 rounding the elementwise kernels store through: the vectorised rows of their
// fallbacks (fp16_rows.hpp's narrow_values) everywhere, and the AVX-512 lanes GELU, the residual
// add and LayerNorm use where this CPU runs them: the reference's bits, NaN payloads, subnormals,
// ties and overflow to inf included; tails of every length.
TEST(PrecisionConvert, EveryBf16NarrowingThisCpuRunsEqualsReference) {
  const std::vector<float> floats = conversion_test_floats(kValues);
  std::vector<bf16> expected(floats.size(), bf16{0xDEAD});
  reference::convert_f32_to_bf16(expected.data(), floats.data(), kValues);
  std::vector<bf16> rows(floats.size(), bf16{0xBEEF});
  cpu::narrow_values(rows.data(), floats.data(), kValues);
  EXPECT_EQ(first_bit_difference(rows, expected), -1) << "narrow_values";
#if defined(__x86_64__)
  if (!sb::cpu_has_avx512()) return;
  std::vector<bf16> lanes(floats.size(), bf16{0xBEEF});
  narrow_in_lanes(lanes.data(), floats.data(), kValues);
  EXPECT_EQ(first_bit_difference(lanes, expected), -1) << "AVX-512 lanes";
  for (i64 n = 1; n <= 17; ++n) {
    std::vector<bf16> part(static_cast<std::size_t>(n) + 1, bf16{0xBEEF});
    narrow_in_lanes(part.data(), floats.data() + 1000 * n, n);
    for (i64 i = 0; i < n; ++i) ASSERT_EQ(part[i].bits, expected[1000 * n + i].bits) << "n " << n << " lane " << i;
    EXPECT_EQ(part[n].bits, 0xBEEF) << "a masked lane was written, n " << n;
  }
#endif
}

TEST(PrecisionConvert, CpuFloatToFp16EqualsReference) {
  const std::vector<float> inp = conversion_test_floats(kValues);
  std::vector<fp16> expected(inp.size(), fp16{0xDEAD}), actual(inp.size(), fp16{0xBEEF});
  reference::convert_f32_to_fp16(expected.data(), inp.data(), kValues);
  cpu::convert_f32_to_fp16(actual.data(), inp.data(), kValues);
  EXPECT_EQ(first_bit_difference(actual, expected), -1);
}

// Every fp16 path this CPU runs, whichever the kernels take here: the portable loop always, the
// F16C one where the CPU has it (every x86-64-v3 CPU), the AVX-512 one where it has that (the
// kernels above take the last of these).
TEST(PrecisionConvert, EveryFp16PathThisCpuRunsEqualsReference) {
  const std::vector<float> floats = conversion_test_floats(kValues);
  const std::vector<fp16> halves = conversion_test_halves<fp16>(kValues);
  std::vector<fp16> expected_halves(floats.size());
  std::vector<float> expected_floats(halves.size());
  reference::convert_f32_to_fp16(expected_halves.data(), floats.data(), kValues);
  reference::convert_fp16_to_f32(expected_floats.data(), halves.data(), kValues);
  struct Path {
    const char* name;
    void (*narrow)(fp16*, const float*, i64);
    void (*widen)(float*, const fp16*, i64);
  };
  std::vector<Path> paths{{"portable", &cpu::f32_to_fp16_portable, &cpu::fp16_to_f32_portable}};
  if (sb::cpu_has_f16c()) paths.push_back({"f16c", &cpu::f32_to_fp16_f16c, &cpu::fp16_to_f32_f16c});
  if (sb::cpu_has_avx512()) paths.push_back({"avx512", &cpu::f32_to_fp16_avx512, &cpu::fp16_to_f32_avx512});
  for (const Path& path : paths) {
    std::vector<fp16> narrowed(floats.size(), fp16{0xBEEF});
    std::vector<float> widened(halves.size(), -2.0f);
    path.narrow(narrowed.data(), floats.data(), kValues);
    path.widen(widened.data(), halves.data(), kValues);
    EXPECT_EQ(first_bit_difference(narrowed, expected_halves), -1) << path.name << ": float to fp16";
    EXPECT_EQ(first_bit_difference(widened, expected_floats), -1) << path.name << ": fp16 to float";
    // rows shorter than a block and with a partial last block (the F16C path pads that block),
    // starting everywhere in the values, NaNs and infinities included
    std::int64_t short_wrong = 0;
    for (i64 n = 1; n <= 17; ++n)
      for (i64 start = 0; start + n <= kValues; start += 1 + n * 37) {
        std::vector<fp16> part_halves(static_cast<std::size_t>(n));
        std::vector<float> part_floats(static_cast<std::size_t>(n));
        path.narrow(part_halves.data(), floats.data() + start, n);
        path.widen(part_floats.data(), halves.data() + start, n);
        for (i64 i = 0; i < n; ++i) {
          short_wrong += part_halves[i].bits != expected_halves[start + i].bits;
          short_wrong += std::memcmp(&part_floats[i], &expected_floats[start + i], sizeof(float)) != 0;
        }
      }
    EXPECT_EQ(short_wrong, 0) << path.name << ": short rows";
    std::printf("fp16 conversion path %s checked on %lld values each way\n", path.name, static_cast<long long>(kValues));
  }
}

// The strided-row forms (attention's heads: rows `ld` apart in the 16-bit tensor, back to back in
// the float scratch; in one AVX-512 call where the CPU has it) give each row the reference's bits,
// NaNs included, on widths from 1 to 40.
TEST(PrecisionConvert, Fp16RowsEqualTheReferenceRowByRow) {
  constexpr i64 kRows = 4096, kLd = 53;  // conversion_test_floats needs about 200,000 values
  const std::vector<float> floats = conversion_test_floats(kRows * kLd);
  const std::vector<fp16> halves = conversion_test_halves<fp16>(kRows * kLd);
  for (i64 n = 1; n <= 40; ++n) {
    const i64 ld = std::max(n, kLd);
    const i64 rows = kRows * kLd / ld;
    std::vector<float> widened(static_cast<std::size_t>(rows * n), -2.0f), expected_floats(widened.size());
    std::vector<fp16> narrowed(halves.size(), fp16{0xBEEF}), expected_halves(halves.size(), fp16{0xBEEF});
    std::vector<float> packed(static_cast<std::size_t>(rows * n));
    for (i64 r = 0; r < rows; ++r) {
      reference::convert_fp16_to_f32(expected_floats.data() + r * n, halves.data() + r * ld, n);
      std::copy_n(floats.data() + r * ld, n, packed.data() + r * n);
      reference::convert_f32_to_fp16(expected_halves.data() + r * ld, packed.data() + r * n, n);
    }
    cpu::widen_rows(widened.data(), halves.data(), ld, rows, n);
    cpu::narrow_rows(narrowed.data(), ld, packed.data(), rows, n);
    EXPECT_EQ(first_bit_difference(widened, expected_floats), -1) << "width " << n;
    EXPECT_EQ(first_bit_difference(narrowed, expected_halves), -1) << "width " << n;
  }
}

TEST(PrecisionConvert, CpuBf16ToFloatEqualsReference) {
  const std::vector<bf16> inp = conversion_test_halves<bf16>(kValues);
  std::vector<float> expected(inp.size(), -1.0f), actual(inp.size(), -2.0f);
  reference::convert_bf16_to_f32(expected.data(), inp.data(), kValues);
  cpu::convert_bf16_to_f32(actual.data(), inp.data(), kValues);
  EXPECT_EQ(first_bit_difference(actual, expected), -1);
}

TEST(PrecisionConvert, CpuFp16ToFloatEqualsReference) {
  const std::vector<fp16> inp = conversion_test_halves<fp16>(kValues);
  std::vector<float> expected(inp.size(), -1.0f), actual(inp.size(), -2.0f);
  reference::convert_fp16_to_f32(expected.data(), inp.data(), kValues);
  cpu::convert_fp16_to_f32(actual.data(), inp.data(), kValues);
  EXPECT_EQ(first_bit_difference(actual, expected), -1);
}

// The reference kernel applies the header's scalar functions (spot check against them).
TEST(PrecisionConvert, ReferenceAppliesTheScalarConversions) {
  const std::vector<float> inp{1.0f + 0x1p-8f, 65520.0f, 0x1p-25f, -0.0f};
  std::vector<bf16> b(inp.size());
  std::vector<fp16> h(inp.size());
  reference::convert_f32_to_bf16(b.data(), inp.data(), 4);
  reference::convert_f32_to_fp16(h.data(), inp.data(), 4);
  EXPECT_EQ(b[0].bits, 0x3F80);
  EXPECT_EQ(h[1].bits, 0x7C00);
  EXPECT_EQ(h[2].bits, 0x0000);
  EXPECT_EQ(h[3].bits, 0x8000);
  EXPECT_EQ(b[3].bits, 0x8000);
}

TEST(PrecisionConvert, ShortAndEmptyInputs) {
  for (i64 n : {0, 1, 7, 8193}) {
    const std::vector<float> inp = conversion_test_floats(4 * 65536 + 64);
    std::vector<fp16> expected(inp.size(), fp16{0x1234}), actual(inp.size(), fp16{0x1234});
    reference::convert_f32_to_fp16(expected.data(), inp.data() + 100000, n);
    cpu::convert_f32_to_fp16(actual.data(), inp.data() + 100000, n);
    EXPECT_EQ(first_bit_difference(actual, expected), -1) << "n=" << n;  // nothing past n written
  }
}

TEST(PrecisionConvert, DispatchTablesHoldTheConversions) {
  const KernelTable& ref = kernels_for(Backend::reference);
  const KernelTable& cpu_table = kernels_for(Backend::cpu);
  EXPECT_EQ(ref.convert_f32_to_bf16, &reference::convert_f32_to_bf16);
  EXPECT_EQ(ref.convert_fp16_to_f32, &reference::convert_fp16_to_f32);
  EXPECT_EQ(cpu_table.convert_f32_to_bf16, &cpu::convert_f32_to_bf16);
  EXPECT_EQ(cpu_table.convert_bf16_to_f32, &cpu::convert_bf16_to_f32);
  EXPECT_EQ(cpu_table.convert_f32_to_fp16, &cpu::convert_f32_to_fp16);
  EXPECT_EQ(cpu_table.convert_fp16_to_f32, &cpu::convert_fp16_to_f32);
}

}  // namespace
}  // namespace sb::kernels::testing
