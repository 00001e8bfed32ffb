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

// What a buffer charges to its tracker: all of it from construction (allocated), or only its
// pages resident in RAM (resident_pages, host only): an anonymous mapping whose untouched or
// discarded pages read as zero and occupy nothing, charged as mincore(2) finds them when the
// owner calls recharge_resident(). ZeRO-2's unsharded gradients are such a buffer: backward
// writes a layer's, its reduction discards them.
enum class Residency { allocated, resident_pages };

// Where a model charges its own gradient buffer: grads when it holds the gradients, comm when
// the buffer is charged by resident pages (ZeRO-2: pages between backward and their reduction;
// the gradients held are the reduction's shard, charged to grads by it).
inline MemoryCategory gradient_buffer_category(Residency residency) {
  return residency == Residency::resident_pages ? MemoryCategory::comm : MemoryCategory::grads;
}

// An owned, zero-initialised allocation on `device` (host: 64-byte aligned; cuda: cudaMalloc's
// 256) charged to a tracker for its lifetime. Move-only.
class TrackedBuffer {
 public:
  TrackedBuffer() = default;
  TrackedBuffer(MemoryTracker& tracker, MemoryCategory category, std::int64_t bytes,
                std::string label, Device device = Device::cpu, Residency residency = Residency::allocated);
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
  Residency residency() const { return residency_; }
  // resident_pages: zeroes bytes [offset, offset + count), giving its whole pages back to the
  // system (the last page whole when the range ends the buffer); recharge_resident() charges it.
  void discard(std::int64_t offset, std::int64_t count);
  // resident_pages: charges the tracker what is resident now; returns those bytes.
  std::int64_t recharge_resident();

 private:
  void free_now();
  MemoryTracker* tracker_ = nullptr;
  MemoryCategory category_ = MemoryCategory::workspace;
  void* data_ = nullptr;
  std::int64_t bytes_ = 0;
  std::string label_;
  Device device_ = Device::cpu;
  Residency residency_ = Residency::allocated;
  std::int64_t charged_ = 0;  // what the tracker holds for this buffer
};

// The size of the pages a resident_pages buffer is charged by.
std::int64_t resident_page_bytes();

// Peak resident set size of this process (VmHWM), in bytes.
std::int64_t peak_rss_bytes();

}  // namespace sb
