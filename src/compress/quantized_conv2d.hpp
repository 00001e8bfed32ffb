// SPDX-License-Identifier: Apache-2.0
// A 2-D convolution (zero padding, no groups) for int8 inference over channels-last images
// (N, H, W, C): the input quantised per tensor, convolved with the per-channel int8 weights
// (OC, C, KH, KW) with int32 sums, dequantised with the bias added (kernels.hpp
// int8_conv2d_forward) into (N, OH, OW, OC). Calibration runs the trained model's fp32
// conv2d_forward, the images turned channels-first and back around it.
// Leaves out the models and where the weights come from (BatchNorm folding: batchnorm_folding).
#pragma once

#include <cstdint>
#include <string>

#include "compress/quantized_linear.hpp"

namespace sb::compress {

struct Conv2dShape {
  std::int64_t C = 0, H = 0, W = 0;  // input channels and size
  std::int64_t OC = 0, KH = 0, KW = 0, stride = 1, pad = 0;
  std::int64_t OH() const { return (H + 2 * pad - KH) / stride + 1; }
  std::int64_t OW() const { return (W + 2 * pad - KW) / stride + 1; }
  std::int64_t K() const { return C * KH * KW; }
  std::int64_t inputs() const { return C * H * W; }      // per image
  std::int64_t outputs() const { return OC * OH() * OW(); }  // per image
};

// Host scratch of one forward, sized by the caller for its largest layer and batch.
struct Conv2dScratch {
  std::int8_t* input_q;  // (N, H, W, C)
  float* channels_first_in;   // calibration: (N, C, H, W)
  float* channels_first_out;  // calibration: (N, OC, OH, OW)
};

class QuantizedConv2d {
 public:
  // weight (OC, C, KH, KW), bias (OC) or nullptr: copied.
  QuantizedConv2d(std::string name, const Conv2dShape& shape, const float* weight,
                  const float* bias, MemoryTracker& tracker);

  // inp (N, H, W, C) -> out (N, OH, OW, OC).
  void forward(float* out, const float* inp, std::int64_t N, InferenceMode mode,
               const Conv2dScratch& scratch, const kernels::KernelTable& k);

  const Conv2dShape& shape() const { return shape_; }
  QuantizedLinear& gemm() { return gemm_; }
  const QuantizedLinear& gemm() const { return gemm_; }
  // Scratch of one forward of N images: int8 input bytes, channels-first floats (calibration).
  std::int64_t input_q_bytes(std::int64_t N) const { return N * shape_.inputs(); }
  std::int64_t channels_first_in_floats(std::int64_t N) const { return N * shape_.inputs(); }
  std::int64_t channels_first_out_floats(std::int64_t N) const { return N * shape_.outputs(); }

 private:
  Conv2dShape shape_;
  QuantizedLinear gemm_;  // the weights as an (OC, C·KH·KW) matrix, their scales and input range
};

}  // namespace sb::compress
