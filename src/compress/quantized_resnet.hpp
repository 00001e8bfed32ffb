// SPDX-License-Identifier: Apache-2.0
// resnet-mini for post-training int8 inference: every BatchNorm folded (running statistics) into
// its convolution, every convolution and the fc layer quantised (per-channel int8 weights,
// per-tensor int8 inputs calibrated on held-out batches, int32 sums); ReLU, the residual adds and
// the global average pool stay fp32. The images run channels-last (the int8 convolution's
// layout), kChunkImages at a time through the whole network, so that a chunk's activations stay
// in the core's cache from one layer to the next. Built from a trained ResnetModel (fp32, whole network), whose
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
  // images_ (N, H, W, C), N <= kChunkImages -> logits (N, classes)
  void forward_chunk(float* logits, std::int64_t N, InferenceMode mode);

  // Images per pass through the network: resnet-mini's widest activations at 16 images are
  // 0.8 MB of fp32, and oneDNN's int8 kernels for 16 images run as fast per image as for 128.
  static constexpr std::int64_t kChunkImages = 16;

  resnet::ResnetConfig config_;
  std::int64_t max_batch_;
  const kernels::KernelTable& k_;
  std::optional<QuantizedConv2d> stem_;
  std::vector<Block> blocks_;
  std::optional<QuantizedLinear> fc_;
  std::int64_t features_ = 0, last_hw_ = 0;
  // activations: a chunk's images (n, H, W, C), 4 × (n, max H·W·C), pooled (n, 64); logits
  // (max_batch, classes); n = min(max_batch, kChunkImages)
  TrackedBuffer acts_;
  TrackedBuffer scratch_;  // workspace: int8 input, channels-first floats (calibration, pool)
  float* images_ = nullptr;
  float* buffers_[4] = {};
  float* pooled_ = nullptr;
  float* logits_ = nullptr;
  Conv2dScratch conv_scratch_{};
};

}  // namespace sb::compress
