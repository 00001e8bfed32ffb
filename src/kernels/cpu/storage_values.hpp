// SPDX-License-Identifier: Apache-2.0
// One value of a kernel's storage type to float and back, for the cpu kernels written once over
// float and bf16 (cpu/bf16_elementwise.hpp): bf16 widens exactly and rounds to nearest even
// (precision/bf16.hpp), in integer selects that GCC vectorises. Leaves out fp16 (its portable
// conversion does not vectorise; StorageKernels widens it with F16C).
#pragma once

#include <type_traits>

#include "precision/bf16.hpp"

namespace sb::kernels::cpu {

inline float widened(float x) { return x; }
inline float widened(bf16 x) { return to_float(x); }

template <class S>
inline S stored(float x) {
  if constexpr (std::is_same_v<S, float>)
    return x;
  else
    return to_bf16(x);
}

}  // namespace sb::kernels::cpu
