// SPDX-License-Identifier: Apache-2.0
// Tracked allocations: every byte scalebench allocates for training is charged to one
// category, so memory per category is measured, not estimated. A buffer lives on the host
// or on the GPU (core/device_memory.hpp); the tracker counts both alike, per process. Leaves
// out device memory pools and the CUDA kernels' own scratch.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/tensor.hpp"

namespace sb {

enum class MemoryCategory : int { params, grads, optimizer, activations, workspace, comm };
inline constexpr int kMemoryCategoryCount = 6;
std::string_view to_string(MemoryCategory category);

struct MemoryUsage {
  std::array<std::int64_t, kMemoryCategoryCount> current{};
  std::array<std::int64_t, kMemoryCategoryCount> peak{};
  std::int64_t total_current = 0;
  std::int64_t total_peak = 0;  // peak of the sum, not the sum of peaks
  std::int64_t of(MemoryCategory c) const { return current[static_cast<int>(c)]; }
  std::int64_t peak_of(MemoryCategory c) const { return peak[static_cast<int>(c)]; }
};

class MemoryTracker {
 public:
  void charge(MemoryCategory category, std::int64_t bytes);
  void release(MemoryCategory category, std::int64_t bytes);
  const MemoryUsage& usage() const { return usage_; }

 private:
  MemoryUsage usage_;
};

// An owned, zero-initialised allocation on `device` (host: 64-byte aligned; cuda: cudaMalloc's
// 256) charged to a tracker for its lifetime. Move-only.
class TrackedBuffer {
 public:
  TrackedBuffer() = default;
  TrackedBuffer(MemoryTracker& tracker, MemoryCategory category, std::int64_t bytes,
                std::string label, Device device = Device::cpu);
  TrackedBuffer(TrackedBuffer&& other) noexcept;
  TrackedBuffer& operator=(TrackedBuffer&& other) noexcept;
  TrackedBuffer(const TrackedBuffer&) = delete;
  TrackedBuffer& operator=(const TrackedBuffer&) = delete;
  ~TrackedBuffer();

  void* data() const { return data_; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  std::int64_t bytes() const { return bytes_; }
  const std::string& label() const { return label_; }
  Device device() const { return device_; }

 private:
  void free_now();
  MemoryTracker* tracker_ = nullptr;
  MemoryCategory category_ = MemoryCategory::workspace;
  void* data_ = nullptr;
  std::int64_t bytes_ = 0;
  std::string label_;
  Device device_ = Device::cpu;
};

// Peak resident set size of this process (VmHWM), in bytes.
std::int64_t peak_rss_bytes();

}  // namespace sb
