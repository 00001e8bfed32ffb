// SPDX-License-Identifier: Apache-2.0
// Raw memory on a device: allocation, zeroing and copies between host and device. The cpu
// device is host memory (64-byte aligned); cuda goes through the CUDA runtime, in builds that
// have it (elsewhere a cuda request throws UserError). Leaves out streams and pools: every
// call here is synchronous with respect to the host and ordered after the work already
// queued on the legacy default stream, which the kernels' blocking stream joins.
#pragma once

#include <cstddef>

#include "core/tensor.hpp"

namespace sb {

// `bytes` zeroed bytes on `device` (nullptr for 0 bytes); throws on failure, naming `label`.
void* allocate_device_bytes(Device device, std::size_t bytes, const char* label);
void free_device_bytes(Device device, void* data);
// data (bytes) on `device` = 0
void zero_device_bytes(Device device, void* data, std::size_t bytes);
// dst (bytes) on dst_device = src (bytes) on src_device
void copy_device_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);

// The bytes free on this process's current GPU (cudaMemGetInfo); UserError without CUDA.
std::size_t device_free_bytes();

// Whether this build can allocate on the GPU (it was compiled with CUDA).
bool device_memory_has_cuda();

}  // namespace sb
