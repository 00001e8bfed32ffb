// SPDX-License-Identifier: Apache-2.0
// An owning, move-only array in device memory (cudaMalloc), with host copies for tests.
// Leaves out pooling and streams: copies are synchronous, for set-up and checks, not steps.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"

namespace sb::kernels::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::int64_t count) : count_(count) {
    SB_CHECK(count >= 0, "DeviceBuffer: negative element count {}", count);
    if (count > 0) SB_CUDA_CHECK(cudaMalloc(&data_, bytes()));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(static_cast<std::int64_t>(host.size())) {
    upload(host);
  }
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);  // no throw from a destructor; a failure here shows at the next call
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      if (data_) cudaFree(data_);
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::int64_t size() const { return count_; }
  std::size_t bytes() const { return static_cast<std::size_t>(count_) * sizeof(T); }

  // Synchronous with respect to the host; ordered after work on blocking streams.
  void upload(const std::vector<T>& host) {
    SB_CHECK(static_cast<std::int64_t>(host.size()) == count_,
             "DeviceBuffer::upload: {} host elements into {} device elements", host.size(), count_);
    if (count_ > 0) SB_CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  void download(std::vector<T>& host) const {
    host.resize(static_cast<std::size_t>(count_));
    if (count_ > 0) SB_CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
  }
  std::vector<T> to_host() const {
    std::vector<T> host;
    download(host);
    return host;
  }

 private:
  T* data_ = nullptr;
  std::int64_t count_ = 0;
};

}  // namespace sb::kernels::cuda
