// SPDX-License-Identifier: Apache-2.0
// One value of a kernel's storage type to float and back, for the cpu kernels written once over
// float and bf16 (cpu/sixteen_bit_elementwise.hpp): bf16 widens exactly and rounds to nearest even
// (precision/bf16.hpp), in integer selects that GCC vectorises. fp16's portable conversion does
// not vectorise: its rows go through cpu/fp16_rows.hpp, and only single values (a channel's
// weight) through these.
#pragma once

#include <type_traits>

#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::cpu {

inline float widened(float x) { return x; }
inline float widened(bf16 x) { return to_float(x); }
inline float widened(fp16 x) { return to_float(x); }  // scalar: a per-channel parameter

template <class S>
inline S stored(float x) {
  if constexpr (std::is_same_v<S, float>)
    return x;
  else if constexpr (std::is_same_v<S, fp16>)
    return to_fp16(x);
  else
    return to_bf16(x);
}

}  // namespace sb::kernels::cpu
