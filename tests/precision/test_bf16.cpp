// SPDX-License-Identifier: Apache-2.0
// bf16 (precision/bf16.hpp): every bit pattern round-trips, ties go to even, special values,
// overflow to inf, float subnormals. Leaves out the comparison with PyTorch
// (test_conversion_golden.cpp) and the kernels (tests/kernels, tests/cuda).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <type_traits>

#include "precision/bf16.hpp"
#include "tests/precision/bits_support.hpp"

namespace sb {
namespace {

using testing::bits_of;
using testing::float_from_bits;

static_assert(std::is_trivially_copyable_v<bf16> && std::is_standard_layout_v<bf16>);
// The bit functions are constexpr.
static_assert(bf16_bits_from_float_bits(0x3F800000u) == 0x3F80);  // 1.0
static_assert(bf16_bits_from_float_bits(0x3F808000u) == 0x3F80);  // tie, even below
static_assert(bf16_bits_from_float_bits(0x3F818000u) == 0x3F82);  // tie, even above
static_assert(float_bits_from_bf16_bits(0xC049u) == 0xC0490000u);

bool is_nan_bits(std::uint16_t h) { return (h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0; }
std::uint16_t cvt(std::uint32_t float_bits) { return to_bf16(float_from_bits(float_bits)).bits; }

TEST(Bf16, EveryBitPatternRoundTrips) {
  for (std::uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const float f = to_float(bf16::from_bits(static_cast<std::uint16_t>(h)));
    ASSERT_EQ(bits_of(f), h << 16) << "bf16 -> float is a shift, h=" << std::hex << h;
    const std::uint16_t back = to_bf16(f).bits;
    if (is_nan_bits(static_cast<std::uint16_t>(h))) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(is_nan_bits(back)) << std::hex << h;
      ASSERT_EQ(back, h | 0x0040u) << "NaN: quiet bit set, sign and payload kept, h=" << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

// For every finite bf16 k (both signs): the float halfway to the next pattern k+1 (next in
// magnitude) goes to whichever of k, k+1 is even; one float ulp below goes to k, above to k+1.
TEST(Bf16, TiesRoundToEvenAndNeighboursRoundToNearest) {
  int ties_down = 0, ties_up = 0;
  for (std::uint32_t k = 0; k <= 0xFFFFu; ++k) {
    if ((k & 0x7F80u) == 0x7F80u) continue;  // inf, NaN
    const std::uint32_t halfway = (k << 16) | 0x8000u;
    const std::uint16_t even = static_cast<std::uint16_t>((k & 1u) ? k + 1 : k);
    ASSERT_EQ(cvt(halfway), even) << std::hex << halfway;
    ASSERT_EQ(cvt(halfway - 1), k) << std::hex << halfway - 1;
    ASSERT_EQ(cvt(halfway + 1), k + 1) << std::hex << halfway + 1;
    (even == k ? ties_down : ties_up)++;
  }
  EXPECT_GT(ties_down, 30000);
  EXPECT_GT(ties_up, 30000);
  // Worked examples: 1 + 2^-8 is half-way between 1 and 1 + 2^-7 (odd) -> 1;
  // 1 + 3·2^-8 is half-way between 1 + 2^-7 (odd) and 1 + 2^-6 (even) -> 1 + 2^-6.
  EXPECT_EQ(to_bf16(1.0f + 0x1p-8f).bits, 0x3F80);
  EXPECT_EQ(to_bf16(1.0f + 3 * 0x1p-8f).bits, 0x3F82);
  EXPECT_EQ(to_bf16(-(1.0f + 0x1p-8f)).bits, 0xBF80);
  EXPECT_EQ(to_bf16(-(1.0f + 3 * 0x1p-8f)).bits, 0xBF82);
  EXPECT_EQ(to_bf16(std::nextafter(1.0f + 0x1p-8f, 2.0f)).bits, 0x3F81);
  EXPECT_EQ(to_bf16(std::nextafter(1.0f + 3 * 0x1p-8f, 0.0f)).bits, 0x3F81);
}

TEST(Bf16, SpecialValues) {
  EXPECT_EQ(to_bf16(0.0f).bits, 0x0000);
  EXPECT_EQ(to_bf16(-0.0f).bits, 0x8000);
  EXPECT_EQ(to_bf16(INFINITY).bits, 0x7F80);
  EXPECT_EQ(to_bf16(-INFINITY).bits, 0xFF80);
  EXPECT_EQ(cvt(0x7FC00000u), 0x7FC0);  // quiet NaN
  EXPECT_EQ(cvt(0xFFC00000u), 0xFFC0);  // negative quiet NaN keeps its sign
  // Signalling NaNs, including payloads only in the discarded low half: quiet NaN, sign kept.
  EXPECT_EQ(cvt(0x7F800001u), 0x7FC0);
  EXPECT_EQ(cvt(0xFF800001u), 0xFFC0);
  EXPECT_EQ(cvt(0x7FA00000u), 0x7FE0);
  EXPECT_EQ(cvt(0x7FFFFFFFu), 0x7FFF);  // all-ones payload must not carry into the sign
  EXPECT_TRUE(std::isnan(to_float(to_bf16(NAN))));
  EXPECT_EQ(to_float(bf16::from_bits(0x3F80)), 1.0f);
}

TEST(Bf16, OverflowRoundsToInfinityAsIeeeDoes) {
  const float max_bf16 = to_float(bf16::from_bits(0x7F7F));  // (2 - 2^-7) 2^127
  EXPECT_EQ(max_bf16, 0x1.FEp127f);
  EXPECT_EQ(cvt(0x7F7F0000u), 0x7F7F);
  EXPECT_EQ(cvt(0x7F7F7FFFu), 0x7F7F);  // below the tie: largest finite
  EXPECT_EQ(cvt(0x7F7F8000u), 0x7F80);  // the tie; 0x7F7F is odd, so up to inf
  EXPECT_EQ(to_bf16(FLT_MAX).bits, 0x7F80);
  EXPECT_EQ(to_bf16(-FLT_MAX).bits, 0xFF80);
  EXPECT_EQ(cvt(0xFF7F7FFFu), 0xFF7F);
}

TEST(Bf16, FloatSubnormalsRoundLikeAnyOtherValue) {
  // bf16 keeps float's exponent range, so float subnormals become bf16 subnormals (unit 2^-133).
  EXPECT_EQ(cvt(0x00000001u), 0x0000);  // 2^-149, far below half a unit
  EXPECT_EQ(cvt(0x00008000u), 0x0000);  // exactly half of 2^-133: tie, 0 is even
  EXPECT_EQ(cvt(0x00008001u), 0x0001);
  EXPECT_EQ(cvt(0x00018000u), 0x0002);  // tie between 1 (odd) and 2 units
  EXPECT_EQ(cvt(0x00010000u), 0x0001);  // exact
  EXPECT_EQ(cvt(0x007FFFFFu), 0x0080);  // largest subnormal rounds up to FLT_MIN
  EXPECT_EQ(cvt(0x807FFFFFu), 0x8080);
  EXPECT_EQ(cvt(0x80000001u), 0x8000);  // -2^-149 -> -0
  EXPECT_EQ(to_float(bf16::from_bits(0x0001)), 0x1p-133f);
}

}  // namespace
}  // namespace sb
