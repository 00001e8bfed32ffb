// SPDX-License-Identifier: Apache-2.0
// Tracked allocations and the process's peak RSS.
#include "core/memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

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

namespace {
std::int64_t page_bytes() {
  static const std::int64_t bytes = sysconf(_SC_PAGESIZE);
  return bytes;
}
std::int64_t whole_pages(std::int64_t bytes) { return (bytes + page_bytes() - 1) / page_bytes() * page_bytes(); }
}  // namespace

TrackedBuffer::TrackedBuffer(MemoryTracker& tracker, MemoryCategory category, std::int64_t bytes,
                             std::string label, Device device, Residency residency)
    : tracker_(&tracker), category_(category), bytes_(bytes), label_(std::move(label)), device_(device),
      residency_(residency) {
  SB_CHECK(bytes >= 0, "negative allocation of {} bytes for {}", bytes, label_);
  if (residency_ == Residency::allocated) {
    data_ = allocate_device_bytes(device_, static_cast<std::size_t>(bytes), label_.c_str());
    charged_ = bytes_;
    tracker_->charge(category_, charged_);
    return;
  }
  SB_CHECK(device_ == Device::cpu, "{}: only host memory is charged by resident pages", label_);
  if (bytes_ == 0) return;
  void* mapping = mmap(nullptr, static_cast<std::size_t>(whole_pages(bytes_)), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  SB_CHECK(mapping != MAP_FAILED, "out of host address space mapping {} bytes for {}: {}", bytes_, label_,
           std::strerror(errno));
  data_ = mapping;
}

TrackedBuffer::TrackedBuffer(TrackedBuffer&& other) noexcept
    : tracker_(std::exchange(other.tracker_, nullptr)),
      category_(other.category_),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      label_(std::move(other.label_)),
      device_(other.device_),
      residency_(other.residency_),
      charged_(std::exchange(other.charged_, 0)) {}

TrackedBuffer& TrackedBuffer::operator=(TrackedBuffer&& other) noexcept {
  if (this != &other) {
    free_now();
    tracker_ = std::exchange(other.tracker_, nullptr);
    category_ = other.category_;
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    label_ = std::move(other.label_);
    device_ = other.device_;
    residency_ = other.residency_;
    charged_ = std::exchange(other.charged_, 0);
  }
  return *this;
}

TrackedBuffer::~TrackedBuffer() { free_now(); }

void TrackedBuffer::free_now() {
  if (tracker_) tracker_->release(category_, charged_);
  if (residency_ == Residency::allocated)
    free_device_bytes(device_, data_);
  else if (data_)
    munmap(data_, static_cast<std::size_t>(whole_pages(bytes_)));
  data_ = nullptr;
  tracker_ = nullptr;
  bytes_ = charged_ = 0;
}

void TrackedBuffer::discard(std::int64_t offset, std::int64_t count) {
  SB_CHECK(residency_ == Residency::resident_pages, "{}: discard() needs a buffer charged by resident pages", label_);
  SB_CHECK(offset >= 0 && count >= 0 && offset + count <= bytes_, "{}: discarding [{}, +{}) of {} bytes", label_,
           offset, count, bytes_);
  char* base = static_cast<char*>(data_);
  const std::int64_t page = page_bytes();
  const std::int64_t end = offset + count == bytes_ ? whole_pages(bytes_) : offset + count;
  const std::int64_t first = (offset + page - 1) / page * page, last = end / page * page;
  if (first >= last) {  // no whole page inside: zero the bytes
    std::memset(base + offset, 0, static_cast<std::size_t>(count));
  } else {
    std::memset(base + offset, 0, static_cast<std::size_t>(first - offset));
    if (end > last) std::memset(base + last, 0, static_cast<std::size_t>(end - last));
    SB_CHECK(madvise(base + first, static_cast<std::size_t>(last - first), MADV_DONTNEED) == 0,
             "{}: madvise(MADV_DONTNEED) of {} bytes failed: {}", label_, last - first, std::strerror(errno));
  }
}

std::int64_t resident_page_bytes() { return page_bytes(); }

std::int64_t TrackedBuffer::recharge_resident() {
  SB_CHECK(residency_ == Residency::resident_pages, "{}: recharge_resident() needs a buffer charged by resident pages",
           label_);
  if (!data_) return 0;
  const std::int64_t pages = whole_pages(bytes_) / page_bytes();
  std::vector<unsigned char> resident(static_cast<std::size_t>(pages));
  SB_CHECK(mincore(data_, static_cast<std::size_t>(pages * page_bytes()), resident.data()) == 0,
           "{}: mincore failed: {}", label_, std::strerror(errno));
  const auto count = std::count_if(resident.begin(), resident.end(), [](unsigned char p) { return p & 1; });
  const std::int64_t now = std::min(bytes_, static_cast<std::int64_t>(count) * page_bytes());
  if (now > charged_) tracker_->charge(category_, now - charged_);
  if (now < charged_) tracker_->release(category_, charged_ - now);
  charged_ = now;
  return now;
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
