// int8 convolution by im2col + int8 GEMM (see quantized_conv2d.hpp).
#include "compress/quantized_conv2d.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace sb::compress {

QuantizedConv2d::QuantizedConv2d(std::string name, const Conv2dShape& shape, const float* weight,
                                 const float* bias, MemoryTracker& tracker)
    : shape_(shape), gemm_(std::move(name), weight, bias, shape.OC, shape.K(), tracker) {
  SB_CHECK(shape.OH() > 0 && shape.OW() > 0, "QuantizedConv2d '{}': empty output", gemm_.name());
}

void im2col_int8(std::int8_t* columns, const std::int8_t* inp, std::int64_t N, const Conv2dShape& s) {
  const std::int64_t OH = s.OH(), OW = s.OW(), K = s.K();
  for (std::int64_t n = 0; n < N; ++n) {
    const std::int8_t* image = inp + n * s.C * s.H * s.W;
    for (std::int64_t oh = 0; oh < OH; ++oh) {
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        std::int8_t* row = columns + ((n * OH + oh) * OW + ow) * K;
        for (std::int64_t c = 0; c < s.C; ++c) {
          const std::int8_t* plane = image + c * s.H * s.W;
          for (std::int64_t kh = 0; kh < s.KH; ++kh) {
            const std::int64_t h = oh * s.stride - s.pad + kh;
            for (std::int64_t kw = 0; kw < s.KW; ++kw) {
              const std::int64_t w = ow * s.stride - s.pad + kw;
              const bool inside = h >= 0 && h < s.H && w >= 0 && w < s.W;
              *row++ = inside ? plane[h * s.W + w] : std::int8_t{0};
            }
          }
        }
      }
    }
  }
}

void QuantizedConv2d::forward(float* out, const float* inp, std::int64_t N, InferenceMode mode,
                              const Conv2dScratch& scratch, const kernels::KernelTable& k) {
  const Conv2dShape& s = shape_;
  if (mode == InferenceMode::calibrate) {
    gemm_.input_range().observe(inp, N * s.C * s.H * s.W);
    k.conv2d_forward(out, inp, gemm_.float_weight(), gemm_.bias(), N, s.C, s.H, s.W, s.OC, s.KH,
                     s.KW, s.stride, s.pad);
    return;
  }
  k.quantize_int8(scratch.input_q, inp, gemm_.input_scale(), N * s.C * s.H * s.W);
  im2col_int8(scratch.columns, scratch.input_q, N, s);
  const std::int64_t HW = s.OH() * s.OW();
  gemm_.forward_int8(scratch.rows_out, scratch.columns, N * HW, k);
  // (N·OH·OW, OC) -> (N, OC, OH·OW)
  for (std::int64_t n = 0; n < N; ++n) {
    const float* rows = scratch.rows_out + n * HW * s.OC;
    float* image = out + n * s.OC * HW;
    for (std::int64_t p = 0; p < HW; ++p)
      for (std::int64_t o = 0; o < s.OC; ++o) image[o * HW + p] = rows[p * s.OC + o];
  }
}

}  // namespace sb::compress
