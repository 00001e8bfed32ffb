// SPDX-License-Identifier: Apache-2.0
// The conversions between NCHW tensors and oneDNN's nChw16c fp32 layout
// (kernels/cpu/blocked_channels_add.hpp) against element-by-element loops, bit for bit, over
// channel counts and pixel counts around the 16 × 16 tile: the AVX-512 tiles where the cpu runs
// them (cpu_runs_avx512_kernels), the 8 × 8 AVX or portable ones otherwise (ctest runs this file
// again with ONEDNN_MAX_CPU_ISA=AVX2).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "kernels/cpu/blocked_channels_add.hpp"
#include "kernels/cpu/storage_values.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::testing {
namespace {

using cpu::kChannelBlock;

struct Layout {
  i64 N, C, HW;
  i64 blocks() const { return (C + kChannelBlock - 1) / kChannelBlock; }
  i64 plain(i64 n, i64 c, i64 p) const { return (n * C + c) * HW + p; }
  i64 blocked(i64 n, i64 c, i64 p) const {
    return ((n * blocks() + c / kChannelBlock) * HW + p) * kChannelBlock + c % kChannelBlock;
  }
  i64 plain_size() const { return N * C * HW; }
  i64 blocked_size() const { return N * blocks() * HW * kChannelBlock; }
  std::string text() const {
    return "N=" + std::to_string(N) + " C=" + std::to_string(C) + " HW=" + std::to_string(HW);
  }
};

// Channels below, at and past one and two blocks; pixels below, at and past a 16-pixel tile,
// and a 7x7 and 14x14 image.
const Layout kLayouts[] = {{1, 1, 1}, {2, 5, 7}, {1, 16, 16}, {3, 17, 49}, {2, 33, 50}, {1, 32, 196}, {2, 16, 17}};

std::vector<float> random_floats(i64 n, std::uint64_t stream) {
  const CounterRng rng(31, stream);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<float>(3.0 * rng.normal(i));
  // an overflow to fp16 infinity and a value that rounds to an fp16 subnormal
  if (n > 3) v[1] = 1e6f, v[2] = 3e-6f;
  return v;
}

template <class S>
std::vector<S> random_values(i64 n, std::uint64_t stream) {
  const std::vector<float> f = random_floats(n, stream);
  std::vector<S> v(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) v[i] = cpu::stored<S>(f[i]);
  return v;
}

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

TEST(BlockedChannels, Fp16ToBlockedWidensEachValueAndZeroesThePaddedChannels) {
  std::uint64_t stream = 0;
  for (const Layout& l : kLayouts) {
    const std::vector<fp16> plain = random_values<fp16>(l.plain_size(), ++stream);
    std::vector<float> blocked(static_cast<std::size_t>(l.blocked_size()), -9.0f);
    cpu::to_blocked_channels(blocked.data(), plain.data(), l.N, l.C, l.HW);
    i64 wrong = 0;
    for (i64 n = 0; n < l.N; ++n)
      for (i64 c = 0; c < l.blocks() * kChannelBlock; ++c)
        for (i64 p = 0; p < l.HW; ++p) {
          const float expected = c < l.C ? to_float(plain[l.plain(n, c, p)]) : 0.0f;
          wrong += !same_bits(blocked[l.blocked(n, c, p)], expected);
        }
    EXPECT_EQ(wrong, 0) << l.text();
  }
}

TEST(BlockedChannels, BlockedToFp16RoundsEachValueOnce) {
  std::uint64_t stream = 100;
  for (const Layout& l : kLayouts) {
    std::vector<float> blocked = random_floats(l.blocked_size(), ++stream);
    if (l.blocked_size() > 5) blocked[5] = std::numeric_limits<float>::quiet_NaN();
    std::vector<fp16> plain(static_cast<std::size_t>(l.plain_size()), fp16{0x1234});
    cpu::from_blocked_channels(plain.data(), blocked.data(), l.N, l.C, l.HW);
    i64 wrong = 0;
    for (i64 n = 0; n < l.N; ++n)
      for (i64 c = 0; c < l.C; ++c)
        for (i64 p = 0; p < l.HW; ++p)
          wrong += plain[l.plain(n, c, p)].bits != to_fp16(blocked[l.blocked(n, c, p)]).bits;
    EXPECT_EQ(wrong, 0) << l.text();
  }
}

template <class S>
void expect_added_once(std::uint64_t stream) {
  for (const Layout& l : kLayouts) {
    const std::vector<float> blocked = random_floats(l.blocked_size(), ++stream);
    std::vector<S> plain = random_values<S>(l.plain_size(), ++stream);
    const std::vector<S> before = plain;
    cpu::add_blocked_channels(plain.data(), blocked.data(), l.N, l.C, l.HW);
    i64 wrong = 0;
    for (i64 n = 0; n < l.N; ++n)
      for (i64 c = 0; c < l.C; ++c)
        for (i64 p = 0; p < l.HW; ++p) {
          const i64 i = l.plain(n, c, p);
          const S expected = cpu::stored<S>(cpu::widened(before[i]) + blocked[l.blocked(n, c, p)]);
          wrong += !same_bits(plain[i], expected);
        }
    EXPECT_EQ(wrong, 0) << l.text();
  }
}

TEST(BlockedChannels, AddIntoFloatSumsEachValue) { expect_added_once<float>(200); }
TEST(BlockedChannels, AddIntoBf16RoundsEachSumOnce) { expect_added_once<bf16>(300); }
TEST(BlockedChannels, AddIntoFp16RoundsEachSumOnce) { expect_added_once<fp16>(400); }

}  // namespace
}  // namespace sb::kernels::testing
