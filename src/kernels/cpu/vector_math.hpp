// SPDX-License-Identifier: Apache-2.0
// Float exp and tanh that GCC vectorises under default (trapping) math flags: straight-line
// code, no float comparisons. Written once over a float or a GCC vector of floats (Floats16),
// so that a kernel's own AVX-512 loop computes the expressions of its vectorised float loop,
// contracted into FMAs alike, to the same bits. Leaves out NaN guarantees and exactness (exp
// within ~2 ulp).
#pragma once

#include <bit>
#include <cstdint>

namespace sb::kernels::cpu {

// Sixteen floats and sixteen int32s as GCC vectors (one AVX-512 register each where the calling
// function targets AVX-512; __m512 converts to and from Floats16).
typedef float Floats16 __attribute__((vector_size(64)));
typedef std::int32_t Ints16 __attribute__((vector_size(64)));

// The int32 lanes of a float type: std::int32_t for float, Ints16 for Floats16.
template <class F>
struct LaneInts {
  using type = std::int32_t;
};
template <>
struct LaneInts<Floats16> {
  using type = Ints16;
};

// GCC notes that a Floats16 returned by a function compiled without AVX-512 would change the ABI;
// these are always inlined, into AVX-512 loops where F is Floats16, so there is no such function
// (and take their operands by reference, which has no such note).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// exp(x): x = k ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2), Cephes' degree-7
// polynomial for exp(r), 2^k assembled in the exponent field. Results below 2^-126 flush to 0
// and k > 127 (x above about 88.38) saturates to +inf; the limits are decided on the integer
// k, because an if-converted float comparison would stop vectorisation.
template <class F>
[[gnu::always_inline]] inline F exp_approx(const F& x) {
  using I = typename LaneInts<F>::type;
  const F shifted = x * 1.44269504088896341f + 12582912.0f;  // 1.5*2^23: round to int
  const F k_float = shifted - 12582912.0f;
  const F r = (x - k_float * 0.693359375f) - k_float * -2.12194440e-4f;
  F p = 1.9875691500e-4f * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const I k = std::bit_cast<I>(shifted) - 0x4B400000;
  const I underflow = (k + 126) >> 31;  // all ones where k < -126
  const I overflow = (127 - k) >> 31;   // all ones where k > 127
  const I bits = std::bit_cast<I>(p * std::bit_cast<F>((k + 127) << 23));
  return std::bit_cast<F>((bits & ~(underflow | overflow)) | (0x7F800000 & overflow));
}

// tanh(u) = 1 - 2 / (exp(2u) + 1): exact limits +-1 through exp's 0 and +inf; absolute error
// about 1e-7 (relative error grows only where |tanh u| < 1e-6).
template <class F>
[[gnu::always_inline]] inline F tanh_approx(const F& u) {
  return 1.0f - 2.0f / (exp_approx(2.0f * u) + 1.0f);
}
#pragma GCC diagnostic pop

}  // namespace sb::kernels::cpu
