// SPDX-License-Identifier: Apache-2.0
// bfloat16 storage: 1 sign, 8 exponent, 7 mantissa bits, the upper half of a binary32 float.
// float -> bf16 rounds to nearest, ties to even (the bits below bit 16 decide; at exactly half
// the even upper half wins); ±inf stay ±inf; finite values at or above FLT_MAX's halfway point
// (0x7F7F8000, the bf16 maximum 0x7F7F plus half an ulp) round up to ±inf, as IEEE does; float
// subnormals round like any other value (to bf16 subnormals or ±0, signs kept); NaN stays NaN,
// quiet (bit 6 set), with its sign and its top 6 payload bits. bf16 -> float is exact (a shift).
// Leaves out arithmetic on bf16 (compute in float), stochastic rounding, and the
// flush-to-zero and round-toward-zero modes.
#pragma once

#include <cstdint>

#include "precision/bits.hpp"

namespace sb {

// The raw bits of one bfloat16 value; trivially copyable, 2 bytes, no constructor (use
// to_bf16 / from_bits).
struct bf16 {
  std::uint16_t bits;

  SB_HOST_DEVICE static constexpr bf16 from_bits(std::uint16_t raw) { return bf16{raw}; }
};
static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2);

// float bits -> bf16 bits, round to nearest even. Integer operations only.
SB_HOST_DEVICE constexpr std::uint16_t bf16_bits_from_float_bits(std::uint32_t f) {
  if ((f & 0x7FFFFFFFu) > 0x7F800000u)  // NaN: keep sign and top payload, set the quiet bit
    return static_cast<std::uint16_t>((f >> 16) | 0x0040u);
  // Adding 0x7FFF plus the lowest kept bit carries into bit 16 exactly when the discarded part
  // is above half, or at half with an odd kept part. A carry out of the mantissa raises the
  // exponent (the largest finite value becomes inf, as it should); inf + 0x7FFF stays inf.
  const std::uint32_t lsb = (f >> 16) & 1u;
  return static_cast<std::uint16_t>((f + 0x7FFFu + lsb) >> 16);
}

// bf16 bits -> float bits, exact.
SB_HOST_DEVICE constexpr std::uint32_t float_bits_from_bf16_bits(std::uint16_t h) {
  return static_cast<std::uint32_t>(h) << 16;
}

SB_HOST_DEVICE inline bf16 to_bf16(float value) {
  return bf16{bf16_bits_from_float_bits(precision_detail::float_bits(value))};
}

SB_HOST_DEVICE inline float to_float(bf16 value) {
  return precision_detail::bits_float(float_bits_from_bf16_bits(value.bits));
}

}  // namespace sb
