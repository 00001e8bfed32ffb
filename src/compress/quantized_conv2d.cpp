// SPDX-License-Identifier: Apache-2.0
// int8 convolution over channels-last images (see quantized_conv2d.hpp).
#include "compress/quantized_conv2d.hpp"

#include "compress/channels_last.hpp"
#include "core/check.hpp"

namespace sb::compress {

QuantizedConv2d::QuantizedConv2d(std::string name, const Conv2dShape& shape, const float* weight,
                                 const float* bias, MemoryTracker& tracker)
    : shape_(shape), gemm_(std::move(name), weight, bias, shape.OC, shape.K(), tracker) {
  SB_CHECK(shape.H + 2 * shape.pad >= shape.KH && shape.W + 2 * shape.pad >= shape.KW,
           "QuantizedConv2d '{}': empty output", gemm_.name());
}

void QuantizedConv2d::forward(float* out, const float* inp, std::int64_t N, InferenceMode mode,
                              const Conv2dScratch& scratch, const kernels::KernelTable& k) {
  const Conv2dShape& s = shape_;
  if (mode == InferenceMode::calibrate) {
    gemm_.input_range().observe(inp, N * s.inputs());
    to_channels_first(scratch.channels_first_in, inp, N, s.C, s.H * s.W);
    k.conv2d_forward(scratch.channels_first_out, scratch.channels_first_in, gemm_.float_weight(), gemm_.bias(), N,
                     s.C, s.H, s.W, s.OC, s.KH, s.KW, s.stride, s.pad);
    to_channels_last(out, scratch.channels_first_out, N, s.OC, s.OH() * s.OW());
    return;
  }
  k.quantize_int8(scratch.input_q, inp, gemm_.input_scale(), N * s.inputs());
  k.int8_conv2d_forward(out, scratch.input_q, gemm_.int8_weight(), gemm_.input_scale(), gemm_.weight_scales(),
                        gemm_.bias(), N, s.C, s.H, s.W, s.OC, s.KH, s.KW, s.stride, s.pad);
}

}  // namespace sb::compress
