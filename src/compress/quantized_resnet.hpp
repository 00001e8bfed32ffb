// SPDX-License-Identifier: Apache-2.0
// resnet-mini for post-training int8 inference: every BatchNorm folded (running statistics) into
// its convolution, every convolution and the fc layer quantised (per-channel int8 weights,
// per-tensor int8 inputs calibrated on held-out batches, int32 sums); ReLU, the residual adds and
// the global average pool stay fp32. Built from a trained ResnetModel (fp32, whole network), whose
// weights it copies. Leaves out training, other resnets' bottleneck blocks and max-pool stems
// (spec only), and the GPU: the int8 kernels run on reference or cpu.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compress/quantized_conv2d.hpp"
#include "compress/quantized_linear.hpp"
#include "core/memory.hpp"
#include "models/resnet/resnet.hpp"

namespace sb::compress {

class QuantizedResnet {
 public:
  // model: trained, fp32, the whole network, on a host backend. Inference batches up to
  // max_batch. Weights are quantised now; activation scales after calibration.
  QuantizedResnet(resnet::ResnetModel& model, std::int64_t max_batch, kernels::Backend backend,
                  MemoryTracker& tracker);

  // images (N, C, H, W), N <= max_batch -> logits (N, classes), valid until the next forward.
  // calibrate: fp32 (folded) weights, recording each quantised layer's input range.
  const float* forward(const float* images, std::int64_t N, InferenceMode mode);
  // Fixes every layer's input scale (at least one calibrate forward first) and frees the fp32
  // weights: from here only int8 forwards.
  void finish_calibration();

  // Bytes as stored: per layer int8 weights, fp32 scales and biases, one fp32 input scale.
  std::int64_t weight_bytes() const;
  // The fp32 network's: 4 · resnet_parameter_count (convolutions, BatchNorm γ β, fc).
  std::int64_t float_weight_bytes() const;
  std::int64_t max_batch() const { return max_batch_; }
  std::int64_t classes() const { return config_.classes; }

 private:
  struct Block {
    QuantizedConv2d conv1, conv2;
    std::optional<QuantizedConv2d> shortcut;
  };
  template <class Function>
  void for_each_conv(Function f);

  resnet::ResnetConfig config_;
  std::int64_t max_batch_;
  const kernels::KernelTable& k_;
  std::optional<QuantizedConv2d> stem_;
  std::vector<Block> blocks_;
  std::optional<QuantizedLinear> fc_;
  std::int64_t features_ = 0, last_hw_ = 0;
  TrackedBuffer acts_;     // activations: 4 × (N, max C·H·W), pooled (N, 64), logits (N, classes)
  TrackedBuffer scratch_;  // workspace: int8 input, int8 columns, float GEMM rows
  float* buffers_[4] = {};
  float* pooled_ = nullptr;
  float* logits_ = nullptr;
  Conv2dScratch conv_scratch_{};
};

}  // namespace sb::compress
