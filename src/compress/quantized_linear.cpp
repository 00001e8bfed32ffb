// SPDX-License-Identifier: Apache-2.0
// A weight matrix for int8 inference (see quantized_linear.hpp).
#include "compress/quantized_linear.hpp"

#include <algorithm>

#include "compress/weight_quantization.hpp"
#include "core/check.hpp"

namespace sb::compress {

QuantizedLinear::QuantizedLinear(std::string name, const float* weight, const float* bias,
                                 std::int64_t OC, std::int64_t K, MemoryTracker& tracker)
    : name_(std::move(name)), OC_(OC), K_(K), has_bias_(bias != nullptr) {
  SB_CHECK(OC > 0 && K > 0, "QuantizedLinear '{}': shape ({}, {})", name_, OC, K);
  const std::int64_t floats = has_bias_ ? 2 * OC : OC;
  quantized_ = TrackedBuffer(tracker, MemoryCategory::params, 4 * floats + OC * K, name_ + ".int8");
  scales_ = quantized_.as<float>();
  bias_ = has_bias_ ? scales_ + OC : nullptr;
  values_ = reinterpret_cast<std::int8_t*>(scales_ + floats);
  const ChannelQuantizedWeights q = quantize_per_channel(weight, OC, K);
  std::copy(q.scales.begin(), q.scales.end(), scales_);
  std::copy(q.values.begin(), q.values.end(), values_);
  if (bias) std::copy(bias, bias + OC, bias_);
  float_ = TrackedBuffer(tracker, MemoryCategory::workspace, 4 * OC * K, name_ + ".fp32");
  std::copy(weight, weight + OC * K, float_.as<float>());
}

const float* QuantizedLinear::float_weight() const {
  SB_CHECK(!calibrated_, "QuantizedLinear '{}': the fp32 weights are freed after calibration", name_);
  return float_.as<float>();
}

void QuantizedLinear::forward_calibrate(float* out, const float* inp, std::int64_t BT,
                                        const kernels::KernelTable& k) {
  input_range_.observe(inp, BT * K_);
  k.matmul_forward(out, inp, float_weight(), bias_, BT, K_, OC_);
}

void QuantizedLinear::forward_int8(float* out, const std::int8_t* inp, std::int64_t BT,
                                   const kernels::KernelTable& k) const {
  k.int8_matmul_forward(out, inp, values_, input_scale(), scales_, bias_, BT,
                        K_, OC_);
}

void QuantizedLinear::forward(float* out, const float* inp, std::int8_t* inp_q, std::int64_t BT,
                              InferenceMode mode, const kernels::KernelTable& k) {
  if (mode == InferenceMode::calibrate) return forward_calibrate(out, inp, BT, k);
  k.quantize_int8(inp_q, inp, input_scale(), BT * K_);
  forward_int8(out, inp_q, BT, k);
}

void QuantizedLinear::finish_calibration() {
  input_scale_ = input_range_.scale();
  calibrated_ = true;
  float_ = TrackedBuffer();
}

float QuantizedLinear::input_scale() const {
  SB_CHECK(calibrated_, "QuantizedLinear '{}': int8 inference before calibration", name_);
  return input_scale_;
}

std::int64_t QuantizedLinear::stored_bytes() const {
  return OC_ * K_ + 4 * OC_ + (has_bias_ ? 4 * OC_ : 0) + 4;
}

}  // namespace sb::compress
