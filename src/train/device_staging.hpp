// SPDX-License-Identifier: Apache-2.0
// Copies of a task's fp32 tensors between the memory they live in (host, or the GPU on device
// cuda) and host vectors, for the code that reads or writes them on the host: checkpoints, the
// non-finite scan, evaluation's logits. The cpu device takes the same calls (a memcpy), so
// the CPU tests run the paths the GPU runs. Leaves out the per-step exchange and optimizer,
// which stay in device memory.
#pragma once

#include <span>
#include <vector>

#include "core/tensor.hpp"

namespace sb::train {

// values (on `device`) -> a host vector
template <class T>
std::vector<T> copy_to_host(std::span<const T> values, Device device);
// destination (on `device`) = values (host); the sizes must agree
template <class T>
void copy_from_host(std::span<T> destination, Device device, std::span<const T> values);
// destination (on `device`) = value, every element
void fill_floats(std::span<float> destination, Device device, float value);

}  // namespace sb::train
