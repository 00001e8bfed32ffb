// SPDX-License-Identifier: Apache-2.0
// Float exp and tanh that GCC vectorises under default (trapping) math flags: straight-line
// code, no float comparisons. Leaves out NaN guarantees and exactness (exp within ~2 ulp).
#pragma once

#include <bit>
#include <cstdint>

namespace sb::kernels::cpu {

// exp(x): x = k ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2), Cephes' degree-7
// polynomial for exp(r), 2^k assembled in the exponent field. Results below 2^-126 flush to 0
// and k > 127 (x above about 88.38) saturates to +inf; the limits are decided on the integer
// k, because an if-converted float comparison would stop vectorisation.
inline float exp_approx(float x) {
  const float shifted = x * 1.44269504088896341f + 12582912.0f;  // 1.5*2^23: round to int
  const float k_float = shifted - 12582912.0f;
  const float r = (x - k_float * 0.693359375f) - k_float * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const std::int32_t k = std::bit_cast<std::int32_t>(shifted) - 0x4B400000;
  const std::int32_t underflow = (k + 126) >> 31;  // all ones where k < -126
  const std::int32_t overflow = (127 - k) >> 31;   // all ones where k > 127
  const std::int32_t bits = std::bit_cast<std::int32_t>(p * std::bit_cast<float>((k + 127) << 23));
  return std::bit_cast<float>((bits & ~(underflow | overflow)) | (0x7F800000 & overflow));
}

// tanh(u) = 1 - 2 / (exp(2u) + 1): exact limits +-1 through exp's 0 and +inf; absolute error
// about 1e-7 (relative error grows only where |tanh u| < 1e-6).
inline float tanh_approx(float u) { return 1.0f - 2.0f / (exp_approx(2.0f * u) + 1.0f); }

}  // namespace sb::kernels::cpu
