// SPDX-License-Identifier: Apache-2.0
// One weight matrix for post-training int8 inference: a linear layer (OC, K) or an im2col'd
// convolution (OC, C·KH·KW), with its per-channel int8 weights, fp32 scales and fp32 bias, and
// the calibrated per-tensor scale of its input. Until finish_calibration() it also keeps the
// fp32 weights, with which calibration batches run. Leaves out the im2col (quantized_conv2d)
// and the models (quantized_resnet, quantized_gpt).
#pragma once

#include <cstdint>
#include <string>

#include "compress/activation_calibration.hpp"
#include "core/memory.hpp"
#include "kernels/kernels.hpp"

namespace sb::compress {

// calibrate: fp32 weights, and every quantised layer records the range of its input;
// int8: quantised inputs and weights, int32 sums (finish_calibration() first).
enum class InferenceMode { calibrate, int8 };

class QuantizedLinear {
 public:
  // weight (OC, K), bias (OC) or nullptr: copied. The int8 weights, scales and bias are tracked
  // as params; the fp32 copy as workspace, until finish_calibration().
  QuantizedLinear(std::string name, const float* weight, const float* bias, std::int64_t OC,
                  std::int64_t K, MemoryTracker& tracker);

  // inp (BT, K) -> out (BT, OC) with the fp32 weights; inp's range is observed.
  void forward_calibrate(float* out, const float* inp, std::int64_t BT, const kernels::KernelTable& k);
  // inp (BT, K) int8 quantised with input_scale() -> out (BT, OC).
  void forward_int8(float* out, const std::int8_t* inp, std::int64_t BT, const kernels::KernelTable& k) const;
  // inp (BT, K) float -> out (BT, OC): calibrate, or quantise inp into inp_q (BT, K) and forward_int8.
  void forward(float* out, const float* inp, std::int8_t* inp_q, std::int64_t BT, InferenceMode mode,
               const kernels::KernelTable& k);

  ActivationRange& input_range() { return input_range_; }
  // Fixes the input scale from the observed range and frees the fp32 weights.
  void finish_calibration();
  bool calibrated() const { return calibrated_; }
  float input_scale() const;

  const std::string& name() const { return name_; }
  std::int64_t out_features() const { return OC_; }
  std::int64_t in_features() const { return K_; }
  const float* float_weight() const;  // (OC, K); before finish_calibration() only
  const std::int8_t* int8_weight() const { return values_; }  // (OC, K)
  const float* weight_scales() const { return scales_; }      // (OC)
  const float* bias() const { return bias_; }                 // (OC) or nullptr
  // Bytes as stored: int8 weights + fp32 scales + fp32 bias (when there is one) + the input
  // scale (one float).
  std::int64_t stored_bytes() const;
  // The fp32 layer it replaces: 4·(OC·K + OC with a bias).
  std::int64_t float_bytes() const { return 4 * (OC_ * K_ + (has_bias_ ? OC_ : 0)); }

 private:
  std::string name_;
  std::int64_t OC_, K_;
  bool has_bias_;
  TrackedBuffer quantized_;  // params: scales (OC) | bias (OC), with one | values (OC, K) int8
  TrackedBuffer float_;      // workspace: the fp32 weights (OC, K), until calibrated
  float* scales_ = nullptr;
  float* bias_ = nullptr;  // nullptr without a bias
  std::int8_t* values_ = nullptr;
  ActivationRange input_range_;
  float input_scale_ = 0.0f;
  bool calibrated_ = false;
};

}  // namespace sb::compress
