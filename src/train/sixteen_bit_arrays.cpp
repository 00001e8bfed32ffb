// SPDX-License-Identifier: Apache-2.0
// 16-bit float arrays: scaled sums and rounded sums, dispatched on bf16 or f16.
#include "train/sixteen_bit_arrays.hpp"

#include <algorithm>
#include <type_traits>

#include "core/check.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"
#include "precision/rounded_sum.hpp"

namespace sb::train {

namespace {

template <class F>
F round_to(float value) {
  if constexpr (std::is_same_v<F, bf16>)
    return to_bf16(value);
  else
    return to_fp16(value);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// fp-contract off: a·scale + b rounds twice on every path, as on the baseline (no FMA there)
#define SB_SIXTEEN_BIT_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), optimize("fp-contract=off")))
#else
#define SB_SIXTEEN_BIT_CLONES
#endif

// One chunk of add_scaled, its null operands decided once (so that each loop vectorises),
// compiled for AVX-512, AVX2 and the baseline, without fused multiply-adds.
template <class F>
SB_SIXTEEN_BIT_CLONES void add_scaled_chunk(std::uint16_t* out, const std::uint16_t* a, float scale, const float* b,
                                            std::int64_t n) {
  if (a && b) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = round_to<F>(to_float(F::from_bits(a[i])) * scale + b[i]).bits;
  } else if (a) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = round_to<F>(to_float(F::from_bits(a[i])) * scale + 0.0f).bits;
  } else if (b) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = round_to<F>(0.0f + b[i]).bits;
  } else {
    for (std::int64_t i = 0; i < n; ++i) out[i] = round_to<F>(0.0f).bits;
  }
}

template <class F>
void add_scaled(std::uint16_t* out, const std::uint16_t* a, float scale, const float* b, std::int64_t n) {
  constexpr std::int64_t kChunk = 16384;
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t begin = c * kChunk, count = std::min(kChunk, n - begin);
    add_scaled_chunk<F>(out + begin, a ? a + begin : nullptr, scale, b ? b + begin : nullptr, count);
  }
}

template <class F>
void add_rounded(std::span<std::uint16_t> into, std::span<const std::uint16_t> add) {
  static_assert(sizeof(F) == sizeof(std::uint16_t));
  sb::add_rounded(reinterpret_cast<F*>(into.data()), reinterpret_cast<const F*>(add.data()),
                  static_cast<std::int64_t>(into.size()));
}

void check_sixteen_bit(parallel::DataType type) {
  SB_CHECK(type == parallel::DataType::bf16 || type == parallel::DataType::f16, "16-bit arithmetic on type {}",
           parallel::to_string(type));
}

}  // namespace

void add_scaled(parallel::DataType type, std::uint16_t* out, const std::uint16_t* a, float scale, const float* b,
                std::int64_t n) {
  check_sixteen_bit(type);
  if (type == parallel::DataType::bf16)
    add_scaled<bf16>(out, a, scale, b, n);
  else
    add_scaled<fp16>(out, a, scale, b, n);
}

void add_rounded(parallel::DataType type, std::span<std::uint16_t> into, std::span<const std::uint16_t> add) {
  check_sixteen_bit(type);
  SB_CHECK(into.size() == add.size(), "16-bit sum of {} and {} values", into.size(), add.size());
  if (type == parallel::DataType::bf16)
    add_rounded<bf16>(into, add);
  else
    add_rounded<fp16>(into, add);
}

}  // namespace sb::train
