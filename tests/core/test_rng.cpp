// SPDX-License-Identifier: Apache-2.0
// Counter-based RNG: known-answer test against the Philox4x32-10 reference vectors and the
// statistical shape of the normal stream.
#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.hpp"

namespace sb {
namespace {

TEST(Philox, MatchesRandom123KnownAnswers) {
  // Known-answer vectors of Random123 (kat_vectors: philox4x32 10 rounds).
  auto zero = philox4x32({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(zero, (PhiloxBlock{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  auto ones = philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                         {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(ones, (PhiloxBlock{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  auto pi = philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                       {0xa4093822u, 0x299f31d0u});
  EXPECT_EQ(pi, (PhiloxBlock{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(CounterRng, SameIndexSameValueAndStreamsDiffer) {
  CounterRng a(42, 7), b(42, 7), c(42, 8), d(43, 7);
  for (std::uint64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(a.uniform(i), b.uniform(i));
    EXPECT_NE(a.bits(i), c.bits(i));
    EXPECT_NE(a.bits(i), d.bits(i));
  }
}

TEST(CounterRng, NormalHasUnitMomentsAndBelowIsInRange) {
  CounterRng rng(1234, 0);
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double x = rng.normal(static_cast<std::uint64_t>(i));
    sum += x;
    sum_sq += x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.01);
  int counts[7] = {};
  for (int i = 0; i < 70000; ++i) {
    auto k = rng.below(static_cast<std::uint64_t>(i), 7);
    ASSERT_LT(k, 7u);
    ++counts[k];
  }
  for (int k = 0; k < 7; ++k) EXPECT_NEAR(counts[k], 10000, 400);
}

}  // namespace
}  // namespace sb
