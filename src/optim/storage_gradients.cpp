// SPDX-License-Identifier: Apache-2.0
// Widening 16-bit main gradients for the optimizer.
#include "optim/storage_gradients.hpp"

#include <algorithm>

#include "core/check.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::optim {

namespace {

template <class F>
const F* as_values(const std::uint16_t* bits) {
  static_assert(sizeof(F) == sizeof(std::uint16_t));
  return reinterpret_cast<const F*>(bits);
}

template <class F>
void widen_as(std::span<float> out, const std::uint16_t* bits, float coefficient) {
  const F* in = as_values<F>(bits);
  const auto n = static_cast<std::int64_t>(out.size());
#pragma omp parallel for simd schedule(static) if (n >= 4096)
  for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = to_float(in[i]) * coefficient;
}

template <class F>
double squared_norm_as(const std::uint16_t* bits, std::int64_t n) {
  const F* in = as_values<F>(bits);
  double sum = 0.0;
#pragma omp parallel for simd reduction(+ : sum) schedule(static) if (n >= 4096)
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = to_float(in[i]);
    sum += x * x;
  }
  return sum;
}

}  // namespace

void widen_gradients(std::span<float> out, const std::uint16_t* bits, GradientStorage storage, float coefficient) {
  SB_CHECK(storage != GradientStorage::fp32, "widen_gradients: the gradients are already fp32");
  if (storage == GradientStorage::bf16)
    widen_as<bf16>(out, bits, coefficient);
  else
    widen_as<fp16>(out, bits, coefficient);
}

TrackedBuffer widening_scratch(const std::vector<ParameterSlice>& slices, MemoryTracker& tracker, Device device) {
  const bool widens = std::any_of(slices.begin(), slices.end(), [](const ParameterSlice& s) { return !s.grad; });
  if (!widens) return {};
  SB_CHECK(device == Device::cpu, "16-bit main gradients are widened in host memory, not on {}", to_string(device));
  return TrackedBuffer(tracker, MemoryCategory::workspace, kWideningChunk * static_cast<std::int64_t>(sizeof(float)),
                       "16-bit main gradients widened");
}

double squared_norm_of_bits(const std::uint16_t* bits, std::int64_t n, GradientStorage storage) {
  SB_CHECK(storage != GradientStorage::fp32, "squared_norm_of_bits: the gradients are fp32");
  return storage == GradientStorage::bf16 ? squared_norm_as<bf16>(bits, n) : squared_norm_as<fp16>(bits, n);
}

}  // namespace sb::optim
