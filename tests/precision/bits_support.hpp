// SPDX-License-Identifier: Apache-2.0
// Float <-> bit pattern helpers for the precision tests. Leaves out the conversions under test.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace sb::testing {

inline float float_from_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline std::uint32_t bits_of(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace sb::testing
