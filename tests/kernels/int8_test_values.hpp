// SPDX-License-Identifier: Apache-2.0
// Operands of the int8 kernel tests (test_int8_matmul.cpp, test_int8_conv2d.cpp and
// tests/cuda/test_cuda_int8_matmul.cpp): int8 values over the whole symmetric range
// [-127, 127] and normal floats, reproducible from (seed, stream), and the first element whose
// bits differ. Leaves out the shapes (each test's own).
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "core/rng.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::testing {

inline std::vector<std::int8_t> random_int8(std::uint64_t seed, i64 n, std::uint64_t stream) {
  const CounterRng rng(seed, stream);
  std::vector<std::int8_t> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<std::int8_t>(static_cast<i64>(rng.below(i, 255)) - 127);
  return v;
}

inline std::vector<float> random_floats(std::uint64_t seed, i64 n, std::uint64_t stream, double scale) {
  const CounterRng rng(seed, stream);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<float>(scale * rng.normal(i));
  return v;
}

// Index of the first element whose bits differ, or -1.
inline i64 first_bit_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return static_cast<i64>(i);
  return -1;
}

}  // namespace sb::kernels::testing
