// SPDX-License-Identifier: Apache-2.0
// Tracked allocations and the process's peak RSS.
#include "core/memory.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include "core/check.hpp"
#include "core/device_memory.hpp"

namespace sb {

std::string_view to_string(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::params: return "params";
    case MemoryCategory::grads: return "grads";
    case MemoryCategory::optimizer: return "optimizer";
    case MemoryCategory::activations: return "activations";
    case MemoryCategory::workspace: return "workspace";
    case MemoryCategory::comm: return "comm";
  }
  return "unknown";
}

void MemoryTracker::charge(MemoryCategory category, std::int64_t bytes) {
  auto i = static_cast<int>(category);
  usage_.current[i] += bytes;
  if (usage_.current[i] > usage_.peak[i]) usage_.peak[i] = usage_.current[i];
  usage_.total_current += bytes;
  if (usage_.total_current > usage_.total_peak) usage_.total_peak = usage_.total_current;
}

void MemoryTracker::release(MemoryCategory category, std::int64_t bytes) {
  auto i = static_cast<int>(category);
  SB_CHECK(usage_.current[i] >= bytes, "releasing {} bytes of {} but only {} are charged", bytes,
           to_string(category), usage_.current[i]);
  usage_.current[i] -= bytes;
  usage_.total_current -= bytes;
}

TrackedBuffer::TrackedBuffer(MemoryTracker& tracker, MemoryCategory category, std::int64_t bytes,
                             std::string label, Device device)
    : tracker_(&tracker), category_(category), bytes_(bytes), label_(std::move(label)), device_(device) {
  SB_CHECK(bytes >= 0, "negative allocation of {} bytes for {}", bytes, label_);
  data_ = allocate_device_bytes(device_, static_cast<std::size_t>(bytes), label_.c_str());
  tracker_->charge(category_, bytes_);
}

TrackedBuffer::TrackedBuffer(TrackedBuffer&& other) noexcept
    : tracker_(std::exchange(other.tracker_, nullptr)),
      category_(other.category_),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      label_(std::move(other.label_)),
      device_(other.device_) {}

TrackedBuffer& TrackedBuffer::operator=(TrackedBuffer&& other) noexcept {
  if (this != &other) {
    free_now();
    tracker_ = std::exchange(other.tracker_, nullptr);
    category_ = other.category_;
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    label_ = std::move(other.label_);
    device_ = other.device_;
  }
  return *this;
}

TrackedBuffer::~TrackedBuffer() { free_now(); }

void TrackedBuffer::free_now() {
  if (tracker_) tracker_->release(category_, bytes_);
  free_device_bytes(device_, data_);
  data_ = nullptr;
  tracker_ = nullptr;
  bytes_ = 0;
}

std::int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      std::int64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(4096, '\n');
  }
  return 0;
}

}  // namespace sb
