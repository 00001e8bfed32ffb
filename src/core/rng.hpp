// SPDX-License-Identifier: Apache-2.0
// Counter-based random numbers (Philox4x32-10, Salmon et al. 2011): the value at index i of
// stream (seed, stream_id) is a pure function of those three numbers, so initialisation and
// data order do not depend on thread count or iteration order.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <utility>

namespace sb {

using PhiloxBlock = std::array<std::uint32_t, 4>;

inline PhiloxBlock philox4x32(PhiloxBlock counter, std::array<std::uint32_t, 2> key) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * counter[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * counter[2];
    counter = {static_cast<std::uint32_t>(p1 >> 32) ^ counter[1] ^ key[0],
               static_cast<std::uint32_t>(p1),
               static_cast<std::uint32_t>(p0 >> 32) ^ counter[3] ^ key[1],
               static_cast<std::uint32_t>(p0)};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return counter;
}

// A stream of random numbers addressed by index. Cheap to copy; no state advances.
class CounterRng {
 public:
  CounterRng(std::uint64_t seed, std::uint64_t stream)
      : key_{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)},
        stream_(stream) {}

  // Four independent 32-bit words for index i.
  PhiloxBlock bits(std::uint64_t i) const {
    return philox4x32({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32),
                       static_cast<std::uint32_t>(stream_),
                       static_cast<std::uint32_t>(stream_ >> 32)},
                      key_);
  }
  // Uniform in [0, 1) with 24 random bits.
  float uniform(std::uint64_t i) const { return (bits(i)[0] >> 8) * (1.0f / 16777216.0f); }
  // Uniform integer in [0, n) (n < 2^32; bias below 2^-32 relative).
  std::uint64_t below(std::uint64_t i, std::uint64_t n) const {
    const auto b = bits(i);
    const std::uint64_t r = (static_cast<std::uint64_t>(b[0]) << 32) | b[1];
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(r) * n) >> 64);
  }
  // Fisher-Yates over items[0, n): position i (from n-1 down to 1) swaps with below(i, i + 1),
  // so a permutation is a pure function of (seed, stream) like every other draw.
  template <class T>
  void shuffle(T* items, std::uint64_t n) const {
    for (std::uint64_t i = n > 0 ? n - 1 : 0; i > 0; --i) std::swap(items[i], items[below(i, i + 1)]);
  }
  // Standard normal for index i (Box-Muller on two 32-bit words).
  double normal(std::uint64_t i) const {
    const auto b = bits(i);
    const double u1 = (static_cast<double>(b[0]) + 1.0) / 4294967297.0;  // (0, 1]
    const double u2 = static_cast<double>(b[1]) / 4294967296.0;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::array<std::uint32_t, 2> key_;
  std::uint64_t stream_;
};

}  // namespace sb
