// SPDX-License-Identifier: Apache-2.0
// The array sums of precision/rounded_sum.hpp against the scalar rounded_sum, bit for bit: every
// 16-bit pattern paired with spread partners and with the special values (zeros, infinities,
// NaNs, the largest finite value, subnormals), at lengths that leave vector remainders; fp16 by
// both paths (portable, and F16C where this CPU has it). Leaves out the reductions that call them
// (tests/parallel, tests/train).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/cpu_isa.hpp"
#include "precision/rounded_sum.hpp"
#include "precision/rounded_sum_paths.hpp"

namespace sb {
namespace {

// Pairs (into, add) of bit patterns: every pattern with a partner spread over the range, then
// every pattern with each special value in turn (a run per special value, so that the vector
// paths see whole blocks without a NaN).
template <class F>
void pairs(std::vector<F>& into, std::vector<F>& add, const std::vector<std::uint16_t>& specials) {
  for (std::uint32_t h = 0; h <= 0xFFFFu; ++h) {
    into.push_back(F::from_bits(static_cast<std::uint16_t>(h)));
    add.push_back(F::from_bits(static_cast<std::uint16_t>((h * 40503u + 12345u) & 0xFFFFu)));
  }
  for (std::uint16_t s : specials)
    for (std::uint32_t h = 0; h <= 0xFFFFu; ++h) {
      into.push_back(F::from_bits(static_cast<std::uint16_t>(h)));
      add.push_back(F::from_bits(s));
    }
}

template <class F, class Sum>
void expect_scalar_bits(const std::vector<F>& into, const std::vector<F>& add, Sum array_sum) {
  for (std::int64_t length : {std::int64_t{1}, std::int64_t{7}, std::int64_t{8}, std::int64_t{61},
                              static_cast<std::int64_t>(into.size())}) {
    std::vector<F> summed(into.begin(), into.begin() + length);
    array_sum(summed.data(), add.data(), length);
    for (std::int64_t i = 0; i < length; ++i) {
      const auto i_ = static_cast<std::size_t>(i);
      ASSERT_EQ(summed[i_].bits, rounded_sum(into[i_], add[i_]).bits)
          << "at " << i << " of " << length << ": " << std::hex << into[i_].bits << " + " << add[i_].bits;
    }
  }
}

TEST(RoundedSumArrays, Bf16EqualsScalarSumForEveryPattern) {
  std::vector<bf16> into, add;
  // 0, -0, inf, -inf, quiet and signalling NaN, largest finite, smallest subnormal, 1
  pairs(into, add, {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x7F7F, 0x0001, 0x3F80});
  expect_scalar_bits(into, add, [](bf16* a, const bf16* b, std::int64_t n) { add_rounded(a, b, n); });
}

TEST(RoundedSumArrays, Fp16PortablePathEqualsScalarSumForEveryPattern) {
  std::vector<fp16> into, add;
  // 0, -0, inf, -inf, quiet and signalling NaN, 65504, smallest subnormal, 1
  pairs(into, add, {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x7BFF, 0x0001, 0x3C00});
  expect_scalar_bits(into, add, &add_rounded_fp16_portable);
}

// add_rounded itself (F16C where this CPU has it, which is then also checked directly).
TEST(RoundedSumArrays, Fp16DispatchedAndF16cPathsEqualScalarSumForEveryPattern) {
  std::vector<fp16> into, add;
  pairs(into, add, {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x7BFF, 0x0001, 0x3C00});
  expect_scalar_bits(into, add, [](fp16* a, const fp16* b, std::int64_t n) { add_rounded(a, b, n); });
  if (cpu_has_f16c()) expect_scalar_bits(into, add, &add_rounded_fp16_f16c);
}

TEST(RoundedSumArrays, FloatsAdd) {
  std::vector<float> into{1.0f, -2.5f, 3.0e38f}, add{0.5f, 2.5f, 3.0e38f};
  add_rounded(into.data(), add.data(), 3);
  EXPECT_EQ(into[0], 1.5f);
  EXPECT_EQ(into[1], 0.0f);
  EXPECT_TRUE(std::isinf(into[2]));
}

}  // namespace
}  // namespace sb
