// SPDX-License-Identifier: Apache-2.0
// What the 16-bit storage types share: the host/device function marker and the bit copy between
// float and its IEEE-754 binary32 pattern. Leaves out the conversions themselves (bf16.hpp,
// fp16.hpp) and any compiler floating-point extension (_Float16, __bf16, __half): the types are
// plain integers so that every compiler, nvcc included, sees the same code.
#pragma once

#include <cstdint>
#include <cstring>

// __host__ __device__ under nvcc (and clang -x cuda), nothing elsewhere.
#if defined(__CUDACC__)
#define SB_HOST_DEVICE __host__ __device__
#else
#define SB_HOST_DEVICE
#endif

// The bit copies are plain inline functions, not constexpr: std::bit_cast is C++20 and nvcc
// compiles this project's device code as C++17, and one definition must read the same in
// both. The integer functions on bit patterns (bf16.hpp, fp16.hpp: *_bits_*) are constexpr.

namespace sb::precision_detail {

// condition ? a : b through a mask, so that loops over the conversions have no branch to
// if-convert (GCC does not vectorise a chain of ?: on unsigned values).
SB_HOST_DEVICE constexpr std::uint32_t select(bool condition, std::uint32_t a, std::uint32_t b) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(condition);
  return (a & mask) | (b & ~mask);
}

SB_HOST_DEVICE inline std::uint32_t float_bits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

SB_HOST_DEVICE inline float bits_float(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

}  // namespace sb::precision_detail
