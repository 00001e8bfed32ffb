// SPDX-License-Identifier: Apache-2.0
// fp16 (precision/fp16.hpp): every bit pattern converts to the exact float and back, ties go to
// even in normals, subnormals and at overflow, special values, underflow. Leaves out the
// comparison with NumPy (test_conversion_golden.cpp) and the kernels (tests/kernels, tests/cuda).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <type_traits>

#include "precision/fp16.hpp"
#include "tests/precision/bits_support.hpp"

namespace sb {
namespace {

using testing::bits_of;
using testing::float_from_bits;

static_assert(std::is_trivially_copyable_v<fp16> && std::is_standard_layout_v<fp16>);
// The bit functions are constexpr.
static_assert(fp16_bits_from_float_bits(0x477FE000u) == 0x7BFF);  // 65504
static_assert(fp16_bits_from_float_bits(0x477FF000u) == 0x7C00);  // 65520 -> inf
static_assert(fp16_bits_from_float_bits(0x33800000u) == 0x0001);  // 2^-24
static_assert(float_bits_from_fp16_bits(0x0001u) == 0x33800000u);

bool is_nan_bits(std::uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0; }
std::uint16_t cvt(float value) { return to_fp16(value).bits; }

// The value of a finite fp16 pattern from its fields, in double: independent of the bit code.
double field_value(std::uint32_t h) {
  const int exponent = static_cast<int>((h >> 10) & 0x1Fu);
  const double mantissa = static_cast<double>(h & 0x3FFu);
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24)
                                         : std::ldexp(1024.0 + mantissa, exponent - 25);
  return (h & 0x8000u) ? -magnitude : magnitude;
}

TEST(Fp16, EveryBitPatternConvertsExactlyAndRoundTrips) {
  for (std::uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const std::uint16_t h16 = static_cast<std::uint16_t>(h);
    const float f = to_float(fp16::from_bits(h16));
    const std::uint16_t back = to_fp16(f).bits;
    if ((h & 0x7C00u) == 0x7C00u) {  // inf or NaN
      if (is_nan_bits(h16)) {
        ASSERT_TRUE(std::isnan(f)) << std::hex << h;
        ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << h;
        ASSERT_TRUE(is_nan_bits(back)) << std::hex << h;
        ASSERT_EQ(back, h | 0x0200u) << "NaN: quiet bit set, sign and payload kept, h=" << std::hex << h;
      } else {
        ASSERT_EQ(f, (h & 0x8000u) ? -INFINITY : INFINITY);
        ASSERT_EQ(back, h);
      }
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), field_value(h)) << std::hex << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << h;  // -0 included
    ASSERT_EQ(back, h) << std::hex << h;
  }
}

// For every finite fp16 k (both signs, subnormals included) and the next pattern k+1 (which is
// inf after 65504): the exact midpoint goes to the even one; one float ulp either side goes to
// the nearer.
TEST(Fp16, TiesRoundToEvenAndNeighboursRoundToNearest) {
  for (std::uint32_t sign : {0x0000u, 0x8000u}) {
    for (std::uint32_t k = 0; k < 0x7C00u; ++k) {
      const double lo = std::fabs(field_value(k));
      const double hi = k + 1 == 0x7C00u ? 65536.0 : std::fabs(field_value(k + 1));
      const float mid = static_cast<float>((lo + hi) / 2);
      ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2) << "midpoint not exact in float";
      const float s = sign ? -1.0f : 1.0f;
      const std::uint16_t even = static_cast<std::uint16_t>(sign | ((k & 1u) ? k + 1 : k));
      ASSERT_EQ(cvt(s * mid), even) << std::hex << k;
      ASSERT_EQ(cvt(s * std::nextafter(mid, 0.0f)), sign | k) << std::hex << k;
      ASSERT_EQ(cvt(s * std::nextafter(mid, INFINITY)), sign | (k + 1)) << std::hex << k;
    }
  }
  // Worked examples: 1 + 2^-11 lies half-way between 1 and 1 + 2^-10 (odd) -> 1;
  // 1 + 3·2^-11 half-way between 1 + 2^-10 (odd) and 1 + 2^-9 (even) -> 1 + 2^-9.
  EXPECT_EQ(cvt(1.0f + 0x1p-11f), 0x3C00);
  EXPECT_EQ(cvt(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(cvt(-(1.0f + 0x1p-11f)), 0xBC00);
  EXPECT_EQ(cvt(-(1.0f + 3 * 0x1p-11f)), 0xBC02);
}

TEST(Fp16, SpecialValues) {
  EXPECT_EQ(cvt(0.0f), 0x0000);
  EXPECT_EQ(cvt(-0.0f), 0x8000);
  EXPECT_EQ(cvt(INFINITY), 0x7C00);
  EXPECT_EQ(cvt(-INFINITY), 0xFC00);
  EXPECT_EQ(cvt(float_from_bits(0x7FC00000u)), 0x7E00);  // quiet NaN
  EXPECT_EQ(cvt(float_from_bits(0xFFC00000u)), 0xFE00);  // sign kept
  // Signalling NaNs: quiet, sign and top payload bits kept; payload only in the low 13 bits
  // must still give NaN, not inf.
  EXPECT_EQ(cvt(float_from_bits(0x7F800001u)), 0x7E00);
  EXPECT_EQ(cvt(float_from_bits(0xFF800001u)), 0xFE00);
  EXPECT_EQ(cvt(float_from_bits(0x7FA00000u)), 0x7F00);
  EXPECT_EQ(cvt(float_from_bits(0x7FFFFFFFu)), 0x7FFF);
  EXPECT_EQ(to_float(fp16::from_bits(0x3C00)), 1.0f);
}

TEST(Fp16, OverflowThresholds) {
  EXPECT_EQ(to_float(fp16::from_bits(0x7BFF)), 65504.0f);
  EXPECT_EQ(cvt(65504.0f), 0x7BFF);
  EXPECT_EQ(cvt(65519.99f), 0x7BFF);
  EXPECT_EQ(cvt(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(cvt(65520.0f), 0x7C00);  // the tie with 65536; 0x7BFF is odd
  EXPECT_EQ(cvt(-65520.0f), 0xFC00);
  EXPECT_EQ(cvt(-65519.99f), 0xFBFF);
  EXPECT_EQ(cvt(65536.0f), 0x7C00);
  EXPECT_EQ(cvt(1e6f), 0x7C00);
  EXPECT_EQ(cvt(FLT_MAX), 0x7C00);
  EXPECT_EQ(cvt(-FLT_MAX), 0xFC00);
}

TEST(Fp16, SubnormalsAndUnderflow) {
  EXPECT_EQ(cvt(0x1p-24f), 0x0001);                     // smallest subnormal
  EXPECT_EQ(to_float(fp16::from_bits(0x0001)), 0x1p-24f);
  EXPECT_EQ(cvt(1023 * 0x1p-24f), 0x03FF);              // largest subnormal
  EXPECT_EQ(to_float(fp16::from_bits(0x03FF)), 1023 * 0x1p-24f);
  EXPECT_EQ(cvt(0x1p-14f), 0x0400);                     // smallest normal
  EXPECT_EQ(cvt(1023.5f * 0x1p-24f), 0x0400);           // tie, 0x3FF odd: up into the normals
  EXPECT_EQ(cvt(0x1p-25f), 0x0000);                     // half of 2^-24: tie, 0 is even
  EXPECT_EQ(cvt(-0x1p-25f), 0x8000);
  EXPECT_EQ(cvt(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(cvt(std::nextafter(0x1p-25f, 0.0f)), 0x0000);
  EXPECT_EQ(cvt(1.5f * 0x1p-24f), 0x0002);              // tie between 1 (odd) and 2
  EXPECT_EQ(cvt(2.5f * 0x1p-24f), 0x0002);              // tie between 2 (even) and 3
  EXPECT_EQ(cvt(-2.5f * 0x1p-24f), 0x8002);
  EXPECT_EQ(cvt(0x1p-30f), 0x0000);
  EXPECT_EQ(cvt(float_from_bits(0x00000001u)), 0x0000);  // float subnormals -> ±0
  EXPECT_EQ(cvt(float_from_bits(0x807FFFFFu)), 0x8000);
}

}  // namespace
}  // namespace sb
