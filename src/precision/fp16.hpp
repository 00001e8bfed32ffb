// SPDX-License-Identifier: Apache-2.0
// IEEE-754 binary16 storage (fp16): 1 sign, 5 exponent, 10 mantissa bits, largest finite 65504,
// smallest normal 2^-14, smallest subnormal 2^-24.
// float -> fp16 rounds to nearest, ties to even, in every range: normals; subnormals (the value
// rounded to a multiple of 2^-24, which may round up into the smallest normal); underflow to ±0
// (|x| <= 2^-25: exactly 2^-25 is the tie between 0 and 2^-24, and 0 is even); overflow to ±inf
// (|x| >= 65520, the tie between 65504 and 65536, where 65536 = inf is the even side); ±inf kept;
// NaN stays NaN, quiet (bit 9 set), with its sign and its top 9 payload bits.
// fp16 -> float is exact, subnormals included (normalised into a float normal); NaN payloads are
// kept. Leaves out arithmetic on fp16 (compute in float), stochastic rounding, flush-to-zero.
// The branches are written as selects so that a loop over these functions vectorises.
#pragma once

#include <cstdint>

#include "precision/bits.hpp"

namespace sb {

// The raw bits of one binary16 value; trivially copyable, 2 bytes, no constructor (use
// to_fp16 / from_bits).
struct fp16 {
  std::uint16_t bits;

  SB_HOST_DEVICE static constexpr fp16 from_bits(std::uint16_t raw) { return fp16{raw}; }
};
static_assert(sizeof(fp16) == 2 && alignof(fp16) == 2);

// float bits -> fp16 bits, round to nearest even. Integer operations only.
SB_HOST_DEVICE constexpr std::uint16_t fp16_bits_from_float_bits(std::uint32_t f) {
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t a = f & 0x7FFFFFFFu;  // |x|
  // Normal range, |x| >= 2^-14 (0x38800000): rebias the exponent (127 -> 15) and round away
  // the 13 low mantissa bits, ties to even. A carry out of the mantissa raises the exponent.
  const std::uint32_t rebased = a - 0x38000000u;
  const std::uint32_t normal = (rebased + 0x0FFFu + ((rebased >> 13) & 1u)) >> 13;
  // Subnormal range, 2^-25 <= |x| < 2^-14 (biased float exponent e in 102..112): the value in
  // units of 2^-24 is the 24-bit significand shifted right by 126 - e (14..24 places).
  const std::uint32_t e = a >> 23;
  const std::uint32_t significand = (a & 0x007FFFFFu) | 0x00800000u;
  const std::uint32_t e_clamped = e < 102u ? 102u : (e > 112u ? 112u : e);
  const std::uint32_t shift = 126u - e_clamped;  // 14..24
  const std::uint32_t kept = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  const std::uint32_t round_up =
      static_cast<std::uint32_t>(rest > half) | (static_cast<std::uint32_t>(rest == half) & kept);
  const std::uint32_t subnormal = kept + round_up;
  // NaN: keep sign and the top payload bits, set the quiet bit.
  const std::uint32_t nan = 0x7E00u | ((a >> 13) & 0x03FFu);
  // Pick by range, from the bottom up, with masks rather than branches.
  using precision_detail::select;
  std::uint32_t magnitude = select(a >= 0x33000000u, subnormal, 0u);  // >= 2^-25
  magnitude = select(a >= 0x38800000u, normal, magnitude);              // >= 2^-14
  magnitude = select(a >= 0x477FF000u, 0x7C00u, magnitude);             // >= 65520: inf
  magnitude = select(a > 0x7F800000u, nan, magnitude);
  return static_cast<std::uint16_t>(sign | magnitude);
}

// fp16 bits -> float bits, exact. Integer operations only.
SB_HOST_DEVICE constexpr std::uint32_t float_bits_from_fp16_bits(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  const std::uint32_t mantissa = h & 0x03FFu;
  // Subnormal m * 2^-24 with its leading one at bit p (0..9): 2^(p-24) * (1 + rest), a float
  // with biased exponent p + 103 and the bits below the leading one moved up to bit 22.
  std::uint32_t p = 0, m = mantissa;
  p += m >= (1u << 8) ? 8u : 0u;
  m = mantissa >> p;
  p += m >= (1u << 4) ? 4u : 0u;
  m = mantissa >> p;
  p += m >= (1u << 2) ? 2u : 0u;
  m = mantissa >> p;
  p += m >= (1u << 1) ? 1u : 0u;
  const std::uint32_t subnormal = ((p + 103u) << 23) | ((mantissa << (23u - p)) & 0x007FFFFFu);
  using precision_detail::select;
  std::uint32_t magnitude = select(mantissa != 0u, subnormal, 0u);
  magnitude = select(exponent != 0u, ((exponent + 112u) << 23) | (mantissa << 13), magnitude);
  magnitude = select(exponent == 0x1Fu, 0x7F800000u | (mantissa << 13), magnitude);  // inf, NaN
  return sign | magnitude;
}

SB_HOST_DEVICE inline fp16 to_fp16(float value) {
  return fp16{fp16_bits_from_float_bits(precision_detail::float_bits(value))};
}

SB_HOST_DEVICE inline float to_float(fp16 value) {
  return precision_detail::bits_float(float_bits_from_fp16_bits(value.bits));
}

}  // namespace sb
