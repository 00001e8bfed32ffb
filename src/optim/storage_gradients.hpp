// SPDX-License-Identifier: Apache-2.0
// 16-bit main gradients (precision.main_grads storage) as an optimizer reads them: a slice's
// bf16 or fp16 gradient widened to fp32 a chunk at a time into a small scratch, multiplied by
// the step's coefficient (loss-scale division and clipping) in the same pass, so no fp32 copy
// of the gradients is ever whole, and no rounding is added to them (Megatron-LM widens its
// 16-bit main gradients into the fp32 optimizer's the same way). Host memory only. Leaves out
// where the gradients were accumulated and reduced (train/storage_main_gradients.hpp).
#pragma once

#include <cstdint>
#include <algorithm>
#include <span>
#include <vector>

#include "core/memory.hpp"
#include "optim/parameter_slice.hpp"

namespace sb::optim {

// Values widened per call of for_each_widened_chunk: 64 KiB of fp32, in a core's L2.
inline constexpr std::int64_t kWideningChunk = 16384;

// bits (n) of `storage` (bf16 or fp16) -> out (n) = value × coefficient, in fp32.
void widen_gradients(std::span<float> out, const std::uint16_t* bits, GradientStorage storage, float coefficient);

// The sum of squares of n 16-bit gradients, accumulated in double (not finite when one is).
double squared_norm_of_bits(const std::uint16_t* bits, std::int64_t n, GradientStorage storage);

// What an optimizer widens into: kWideningChunk floats (category workspace) when some slice
// holds 16-bit gradients, an empty buffer otherwise. `device`: where the optimizer runs (16-bit
// main gradients are host memory only).
TrackedBuffer widening_scratch(const std::vector<ParameterSlice>& slices, MemoryTracker& tracker, Device device);

// Calls fn(offset, widened) for each chunk [offset, offset + widened.size()) of a 16-bit
// slice's gradient, widened × coefficient into `scratch` (a widening_scratch).
template <class Fn>
void for_each_widened_chunk(const ParameterSlice& slice, float coefficient, const TrackedBuffer& scratch, Fn&& fn) {
  for (std::int64_t offset = 0; offset < slice.numel; offset += kWideningChunk) {
    const std::span<float> widened(scratch.as<float>(),
                                   static_cast<std::size_t>(std::min(kWideningChunk, slice.numel - offset)));
    widen_gradients(widened, slice.grad_bits + offset, slice.grad_storage, coefficient);
    fn(offset, std::span<const float>(widened));
  }
}

// Calls fn(offset, grad, n) over a slice's gradient: once with the fp32 gradient itself, or per
// chunk widened as above for 16-bit main gradients.
template <class Fn>
void for_each_gradient_run(const ParameterSlice& slice, float coefficient, const TrackedBuffer& scratch, Fn&& fn) {
  if (slice.grad) {
    fn(std::int64_t{0}, static_cast<const float*>(slice.grad), slice.numel);
    return;
  }
  for_each_widened_chunk(slice, coefficient, scratch, [&](std::int64_t offset, std::span<const float> grad) {
    fn(offset, grad.data(), static_cast<std::int64_t>(grad.size()));
  });
}

}  // namespace sb::optim
