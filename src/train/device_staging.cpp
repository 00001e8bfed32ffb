// SPDX-License-Identifier: Apache-2.0
// Host staging of device tensors through copy_device_bytes (a memcpy on the cpu device).
#include "train/device_staging.hpp"

#include <cstdint>

#include "core/check.hpp"
#include "core/device_memory.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::train {

template <class T>
std::vector<T> copy_to_host(std::span<const T> values, Device device) {
  std::vector<T> host(values.size());
  if (!values.empty()) copy_device_bytes(host.data(), Device::cpu, values.data(), device, values.size_bytes());
  return host;
}

template <class T>
void copy_from_host(std::span<T> destination, Device device, std::span<const T> values) {
  SB_CHECK(destination.size() == values.size(), "staging {} host values into a tensor of {}", values.size(),
           destination.size());
  if (!values.empty()) copy_device_bytes(destination.data(), device, values.data(), Device::cpu, values.size_bytes());
}

void fill_floats(std::span<float> destination, Device device, float value) {
  const std::vector<float> host(destination.size(), value);
  copy_from_host(destination, device, std::span<const float>(host));
}

template std::vector<float> copy_to_host(std::span<const float>, Device);
template std::vector<bf16> copy_to_host(std::span<const bf16>, Device);
template std::vector<fp16> copy_to_host(std::span<const fp16>, Device);
template void copy_from_host(std::span<float>, Device, std::span<const float>);

}  // namespace sb::train
