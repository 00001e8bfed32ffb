// The device types behind the project's 16-bit storage structs (sb::bf16, sb::fp16: the same
// two bytes), their float conversions and 16-byte vector access, for the native 16-bit kernels
// (storage_*.cu). Leaves out fp8 and stochastic rounding.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/gemm.hpp"
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

// 8 values of D in one 16-byte load or store (the pointer 16-byte aligned).
template <class D>
struct alignas(16) Pack8 {
  D v[8];
};
template <class D>
__device__ inline Pack8<D> load8(const D* p) {
  return *reinterpret_cast<const Pack8<D>*>(p);
}
template <class D>
__device__ inline void store8(D* p, const Pack8<D>& pack) {
  *reinterpret_cast<Pack8<D>*>(p) = pack;
}
inline bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

}  // namespace sb::kernels::cuda
