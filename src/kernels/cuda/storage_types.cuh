// SPDX-License-Identifier: Apache-2.0
// The device types behind the project's 16-bit storage structs (sb::bf16, sb::fp16: the same
// two bytes), their float conversions and 16-byte vector access, for the native 16-bit kernels
// (storage_*.cu). Leaves out fp8 and stochastic rounding.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "kernels/cuda/gemm.hpp"
#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::cuda {

template <class S>
struct DeviceStorage;
template <>
struct DeviceStorage<bf16> {
  using type = __nv_bfloat16;
  static constexpr GemmPrecision precision = GemmPrecision::bf16;
  static constexpr cudaDataType_t cuda_type = CUDA_R_16BF;
};
template <>
struct DeviceStorage<fp16> {
  using type = __half;
  static constexpr GemmPrecision precision = GemmPrecision::fp16;
  static constexpr cudaDataType_t cuda_type = CUDA_R_16F;
};
static_assert(sizeof(bf16) == sizeof(__nv_bfloat16) && sizeof(fp16) == sizeof(__half));

template <class S>
using Device = typename DeviceStorage<S>::type;

// The device view of a storage pointer (same bytes, the CUDA type).
template <class S>
typename DeviceStorage<S>::type* device_view(S* p) {
  return reinterpret_cast<typename DeviceStorage<S>::type*>(p);
}
template <class S>
const typename DeviceStorage<S>::type* device_view(const S* p) {
  return reinterpret_cast<const typename DeviceStorage<S>::type*>(p);
}

__device__ inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float widen(__half x) { return __half2float(x); }
__device__ inline float widen(float x) { return x; }
// Round to nearest, ties to even (the host's to_bf16/to_fp16).
template <class D>
__device__ D narrow(float x);
template <>
__device__ inline __nv_bfloat16 narrow<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ inline __half narrow<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ inline float narrow<float>(float x) { return x; }

// W values of D in one load or store (W = 8: 16 bytes; the pointer aligned to the pack).
template <class D, int W>
struct alignas(sizeof(D) * W) Pack {
  D v[W];
};
template <int W, class D>
__device__ inline Pack<D, W> load_pack(const D* p) {
  return *reinterpret_cast<const Pack<D, W>*>(p);
}
template <int W, class D>
__device__ inline void store_pack(D* p, const Pack<D, W>& pack) {
  *reinterpret_cast<Pack<D, W>*>(p) = pack;
}
template <class D>
using Pack8 = Pack<D, 8>;
template <class D>
__device__ inline Pack8<D> load8(const D* p) {
  return load_pack<8>(p);
}
template <class D>
__device__ inline void store8(D* p, const Pack8<D>& pack) {
  store_pack<8>(p, pack);
}
inline bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

// f(std::integral_constant<int, 8>) when rows of `length` values at these pointers split into
// aligned 16-byte packs (length % 8 == 0, every pointer 16-byte aligned), else
// f(std::integral_constant<int, 1>): a row kernel's pack width, chosen at launch.
template <class F>
void with_pack_width(i64 length, std::initializer_list<const void*> pointers, F f) {
  bool vector = length % 8 == 0;
  for (const void* p : pointers) vector = vector && aligned16(p);
  if (vector)
    f(std::integral_constant<int, 8>{});
  else
    f(std::integral_constant<int, 1>{});
}

}  // namespace sb::kernels::cuda
