// SPDX-License-Identifier: Apache-2.0
// Inputs for the float <-> bf16/fp16 kernel tests (cpu here, cuda in tests/cuda): float bit
// patterns that hit every rounding regime, then uniformly random bits; 16-bit patterns that
// cycle through all 65536 values, then random ones. Leaves out expected values: the tests
// compare a back-end with the reference kernels bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/rng.hpp"
#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::testing {

// n floats (n >= 4·65536 + 32): specials, every bf16 tie (k << 16 | 0x8000), every fp16 value
// as a float and the float one ulp above it, then random bit patterns.
inline std::vector<float> conversion_test_floats(i64 n) {
  const std::uint32_t specials[] = {
      0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u,
      0xFF800001u, 0x7FA00000u, 0x7FFFFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F8000u, 0x7F7F7FFFu,
      0x477FE000u, 0x477FF000u, 0x477FEFFFu, 0xC77FF000u, 0x33000000u, 0x33000001u, 0x33800000u,
      0x38800000u, 0x387FC000u, 0x00000001u, 0x007FFFFFu, 0x80000001u, 0x00008000u, 0x00018000u};
  const CounterRng rng(20261129, 16);
  std::vector<std::uint32_t> bits(static_cast<std::size_t>(n));
  i64 i = 0;
  for (std::uint32_t s : specials) bits[static_cast<std::size_t>(i++)] = s;
  for (std::uint32_t k = 0; k <= 0xFFFFu; ++k) bits[static_cast<std::size_t>(i++)] = (k << 16) | 0x8000u;
  for (std::uint32_t k = 0; k <= 0xFFFFu; ++k) {
    const std::uint32_t exact = float_bits_from_fp16_bits(static_cast<std::uint16_t>(k));
    bits[static_cast<std::size_t>(i++)] = exact;
    bits[static_cast<std::size_t>(i++)] = exact + 1;
  }
  for (; i < n; ++i) bits[static_cast<std::size_t>(i)] = rng.bits(static_cast<std::uint64_t>(i))[0];
  std::vector<float> floats(bits.size());
  std::memcpy(floats.data(), bits.data(), bits.size() * sizeof(float));
  return floats;
}

// n 16-bit patterns: 0..65535 repeated for the first half, random patterns after.
template <class Half>
std::vector<Half> conversion_test_halves(i64 n) {
  const CounterRng rng(20261129, 17);
  std::vector<Half> halves(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) {
    const std::uint32_t raw = i < n / 2 ? static_cast<std::uint32_t>(i) : rng.bits(static_cast<std::uint64_t>(i))[0];
    halves[static_cast<std::size_t>(i)] = Half::from_bits(static_cast<std::uint16_t>(raw & 0xFFFFu));
  }
  return halves;
}

// Index of the first element whose bytes differ, or -1.
template <class T>
i64 first_bit_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<i64>(i);
  return -1;
}

}  // namespace sb::kernels::testing
