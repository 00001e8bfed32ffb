// SPDX-License-Identifier: Apache-2.0
// A 2-D convolution (NCHW, zero padding, no groups) for int8 inference: the input quantised per
// tensor, unfolded (im2col) into int8 rows (N·OH·OW, C·KH·KW), multiplied by the per-channel int8
// weights (OC, C·KH·KW) with int32 sums (kernels.hpp int8_matmul_forward), dequantised with the
// bias added, and laid back out as (N, OC, OH, OW). Calibration runs the fp32 conv2d_forward.
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
};

// Host scratch of one forward, sized by the caller for its largest layer and batch.
struct Conv2dScratch {
  std::int8_t* input_q;  // (N, C, H, W)
  std::int8_t* padded;   // (C, H + 2·pad, W + 2·pad): one image with its zero border
  std::int8_t* columns;  // (N·OH·OW, C·KH·KW)
  float* rows_out;       // (N·OH·OW, OC)
};

class QuantizedConv2d {
 public:
  // weight (OC, C, KH, KW), bias (OC) or nullptr: copied.
  QuantizedConv2d(std::string name, const Conv2dShape& shape, const float* weight,
                  const float* bias, MemoryTracker& tracker);

  // inp (N, C, H, W) -> out (N, OC, OH, OW).
  void forward(float* out, const float* inp, std::int64_t N, InferenceMode mode,
               const Conv2dScratch& scratch, const kernels::KernelTable& k);

  const Conv2dShape& shape() const { return shape_; }
  QuantizedLinear& gemm() { return gemm_; }
  const QuantizedLinear& gemm() const { return gemm_; }
  // Scratch bytes of one forward of N images: int8 input, int8 columns, float rows.
  std::int64_t input_q_bytes(std::int64_t N) const { return N * shape_.C * shape_.H * shape_.W; }
  std::int64_t padded_bytes() const {
    return shape_.C * (shape_.H + 2 * shape_.pad) * (shape_.W + 2 * shape_.pad);
  }
  std::int64_t columns_bytes(std::int64_t N) const { return N * shape_.OH() * shape_.OW() * shape_.K(); }
  std::int64_t rows_out_floats(std::int64_t N) const { return N * shape_.OH() * shape_.OW() * shape_.OC; }

 private:
  Conv2dShape shape_;
  QuantizedLinear gemm_;
};

// inp (N, C, H, W) int8 -> columns (N·OH·OW, C·KH·KW): row (n, oh, ow) holds the receptive
// field in (c, kh, kw) order, the weight's order; zeros where it overlaps the padding.
// padded: scratch of (C, H + 2·pad, W + 2·pad) bytes (unused when pad is 0), so that the copy
// loop has no bounds checks.
void im2col_int8(std::int8_t* columns, std::int8_t* padded, const std::int8_t* inp, std::int64_t N,
                 const Conv2dShape& s);

}  // namespace sb::compress
