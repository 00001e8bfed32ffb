// Tracked allocations: every byte scalebench allocates for training is charged to one
// category, so memory per category is measured, not estimated. Leaves out device memory
// pools (the CUDA back-end charges its own allocations through the same tracker).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

// An owned, 64-byte aligned, zero-initialised host allocation charged to a tracker for its
// lifetime. Move-only.
class TrackedBuffer {
 public:
  TrackedBuffer() = default;
  TrackedBuffer(MemoryTracker& tracker, MemoryCategory category, std::int64_t bytes,
                std::string label);
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

 private:
  void free_now();
  MemoryTracker* tracker_ = nullptr;
  MemoryCategory category_ = MemoryCategory::workspace;
  void* data_ = nullptr;
  std::int64_t bytes_ = 0;
  std::string label_;
};

// Peak resident set size of this process (VmHWM), in bytes.
std::int64_t peak_rss_bytes();

}  // namespace sb
