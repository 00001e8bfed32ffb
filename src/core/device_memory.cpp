// SPDX-License-Identifier: Apache-2.0
// Host allocations with aligned_alloc and memset; device ones with cudaMalloc, cudaMemset and
// cudaMemcpy (SB_HAVE_CUDA builds link the static CUDA runtime into sb_core).
#include "core/device_memory.hpp"

#include <cstdlib>
#include <cstring>

#include "core/check.hpp"

#ifdef SB_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace sb {
namespace {

#ifdef SB_HAVE_CUDA
void check_cuda(cudaError_t status, const char* call, std::size_t bytes, const char* label) {
  SB_CHECK(status == cudaSuccess, "{} of {} bytes{}{} failed: {} ({})", call, bytes, label ? " for " : "",
           label ? label : "", cudaGetErrorString(status), static_cast<int>(status));
}
#endif

#ifndef SB_HAVE_CUDA
[[noreturn]] void no_cuda(const char* what) {
  throw UserError(fmt::format("{}: not compiled: cuda (this build has no CUDA runtime; use device: cpu)", what));
}
#endif

}  // namespace

bool device_memory_has_cuda() {
#ifdef SB_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::size_t device_free_bytes() {
#ifdef SB_HAVE_CUDA
  std::size_t free = 0, total = 0;
  check_cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo", 0, nullptr);
  return free;
#else
  no_cuda("the GPU's free memory");
#endif
}

void* allocate_device_bytes(Device device, std::size_t bytes, const char* label) {
  if (bytes == 0) return nullptr;
  if (device == Device::cpu) {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    void* data = std::aligned_alloc(64, rounded);
    SB_CHECK(data != nullptr, "out of host memory allocating {} bytes for {}", bytes, label);
    std::memset(data, 0, rounded);
    return data;
  }
#ifdef SB_HAVE_CUDA
  void* data = nullptr;
  check_cuda(cudaMalloc(&data, bytes), "cudaMalloc", bytes, label);
  check_cuda(cudaMemset(data, 0, bytes), "cudaMemset", bytes, label);
  return data;
#else
  no_cuda(label);
#endif
}

void free_device_bytes(Device device, void* data) {
  if (data == nullptr) return;
  if (device == Device::cpu) {
    std::free(data);
    return;
  }
#ifdef SB_HAVE_CUDA
  cudaFree(data);  // nothing to do on failure inside a destructor
#endif
}

void zero_device_bytes(Device device, void* data, std::size_t bytes) {
  if (bytes == 0) return;
  if (device == Device::cpu) {
    std::memset(data, 0, bytes);
    return;
  }
#ifdef SB_HAVE_CUDA
  check_cuda(cudaMemset(data, 0, bytes), "cudaMemset", bytes, nullptr);
#else
  no_cuda("zeroing device memory");
#endif
}

void copy_device_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (dst_device == Device::cpu && src_device == Device::cpu) {
    std::memmove(dst, src, bytes);
    return;
  }
#ifdef SB_HAVE_CUDA
  check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy", bytes, nullptr);
#else
  no_cuda("copying device memory");
#endif
}

}  // namespace sb
